//===- InputLimits.h - checked sizes and nesting of untrusted input -*- C++
//-*-===//
//
// Readers of files written by other people (specs, .npy, safetensors, the C
// API's arguments) check sizes and nesting here before they allocate or
// recurse. Header-only and free of LLVM, so that the C API can use it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_INPUTLIMITS_H
#define ATTN_RUNTIME_INPUTLIMITS_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string_view>
#include <sys/resource.h>
#include <unistd.h>

namespace attnrt {

/// The most bytes one tensor may take (1 TiB). Larger requests come from
/// corrupt or hostile headers, never from a model this runtime can run.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 40;

/// The largest size of one dimension (length, heads, widths, ...) a spec,
/// a layer manifest or a header may give: 2^40.
constexpr int64_t kMaxSize = int64_t(1) << 40;

/// The deepest bracket nesting a spec, a layer spec or a JSON header may
/// have. Real inputs nest a handful of levels; recursive-descent parsers
/// overflow the stack at some thousands.
constexpr unsigned kMaxNestingDepth = 64;

/// a * b for sizes (>= 0); nullopt when either is negative or the product
/// overflows int64_t.
inline std::optional<int64_t> mulSizes(int64_t a, int64_t b) {
  int64_t product;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product))
    return std::nullopt;
  return product;
}

/// The product of `count` sizes times `elementBytes`; nullopt when a size
/// is negative, the product overflows, or it exceeds kMaxTensorBytes.
inline std::optional<int64_t> tensorBytes(const int64_t *sizes, size_t count,
                                          int64_t elementBytes) {
  std::optional<int64_t> bytes = elementBytes;
  for (size_t d = 0; d < count && bytes; ++d)
    bytes = mulSizes(*bytes, sizes[d]);
  if (!bytes || *bytes > kMaxTensorBytes)
    return std::nullopt;
  return bytes;
}

/// The machine's physical memory in bytes (0 when unknown): runs whose
/// buffers need more are refused up front rather than failing mid-way.
inline int64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return int64_t(pages) * int64_t(pageSize);
}

/// The bytes this process may still allocate, as far as it can tell: the
/// physical memory, or less under an address-space limit (`ulimit -v`),
/// less what the process already maps. 0 when unknown. Work that needs
/// more is refused up front: compiled kernels cannot report a failed
/// allocation.
inline int64_t memoryBudgetBytes() {
  int64_t budget = physicalMemoryBytes();
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    int64_t mapped = 0;
    if (FILE *statm = std::fopen("/proc/self/statm", "r")) {
      long pages = 0;
      if (std::fscanf(statm, "%ld", &pages) == 1)
        mapped = int64_t(pages) * sysconf(_SC_PAGESIZE);
      std::fclose(statm);
    }
    int64_t left = std::max<int64_t>(int64_t(limit.rlim_cur) - mapped, 1);
    budget = budget ? std::min(budget, left) : left;
  }
  return budget;
}

/// Syntax whose strings and comments are skipped when nesting is counted.
enum class NestingSyntax { Json, Yaml };

/// The offset of the first bracket ('[', '{', '(' or '<' in YAML scalars
/// such as attn patterns) that opens level `maxDepth + 1`, or npos when the
/// text nests no deeper than `maxDepth`. Quoted strings count too for
/// '[' / '<' in YAML, whose quoted scalars hold attn attribute text.
inline size_t findExcessNesting(std::string_view text, unsigned maxDepth,
                                NestingSyntax syntax) {
  unsigned depth = 0;
  char quote = 0;
  bool yaml = syntax == NestingSyntax::Yaml;
  for (size_t n = 0; n < text.size(); ++n) {
    char c = text[n];
    if (quote) {
      if (c == '\\' && quote == '"')
        ++n;
      else if (c == quote)
        quote = 0;
      // attn attributes inside quoted YAML scalars nest too.
      else if (yaml && (c == '[' || c == '<') && ++depth > maxDepth)
        return n;
      else if (yaml && (c == ']' || c == '>') && depth)
        --depth;
      continue;
    }
    if (c == '"' || (yaml && c == '\'')) {
      quote = c;
    } else if (yaml && c == '#' &&
               (n == 0 || text[n - 1] == ' ' || text[n - 1] == '\n')) {
      while (n < text.size() && text[n] != '\n')
        ++n; // a comment
    } else if (c == '[' || c == '{' || c == '(' || (yaml && c == '<')) {
      if (++depth > maxDepth)
        return n;
    } else if ((c == ']' || c == '}' || c == ')' || (yaml && c == '>')) &&
               depth) {
      --depth;
    }
  }
  return std::string_view::npos;
}

} // namespace attnrt

#endif // ATTN_RUNTIME_INPUTLIMITS_H
