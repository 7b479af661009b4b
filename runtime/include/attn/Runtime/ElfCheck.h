//===- ElfCheck.h - is a file a whole ELF shared object? --------*- C++ -*-===//
//
// dlopen maps an artifact's segments as its program headers say, whatever
// the file's size: a truncated library (a copy cut short, a full disk)
// faults with SIGBUS when the loader touches a page past the end. Callers
// check the file first: headers, program headers and section extents must
// lie within it. Header-only and free of LLVM, for the C API and the
// compiler side alike.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_ELFCHECK_H
#define ATTN_RUNTIME_ELFCHECK_H

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace attnrt {

/// Why `path` is not a complete 64-bit little-endian ELF shared object, or
/// "" when it is one (whether it loads is then dlopen's to say). A bare
/// name that is no file here is left to dlopen's search path ("").
inline std::string elfProblem(const char *path) {
  if (!std::strchr(path, '/') && access(path, F_OK) != 0)
    return "";
  struct stat info;
  if (stat(path, &info) != 0)
    return std::string(path) + ": cannot open shared object file: " +
           std::strerror(errno);
  if (!S_ISREG(info.st_mode))
    return std::string(path) + ": not a regular file";
  uint64_t size = uint64_t(info.st_size);
  FILE *file = std::fopen(path, "rb");
  if (!file)
    return std::string(path) + ": cannot open shared object file: " +
           std::strerror(errno);
  auto readAt = [&](uint64_t offset, void *to, uint64_t bytes) {
    return offset <= size && bytes <= size - offset &&
           std::fseek(file, long(offset), SEEK_SET) == 0 &&
           std::fread(to, 1, bytes, file) == bytes;
  };
  // offset + count * entry within the file, without overflow.
  auto within = [&](uint64_t offset, uint64_t count, uint64_t entry) {
    return offset <= size && (entry == 0 || count <= (size - offset) / entry);
  };
  std::string problem;
  Elf64_Ehdr header;
  if (!readAt(0, &header, sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    problem = "not an ELF file";
  else if (header.e_ident[EI_CLASS] != ELFCLASS64 ||
           header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_type != ET_DYN)
    problem = "not a 64-bit little-endian ELF shared object";
  else if (header.e_phentsize != sizeof(Elf64_Phdr) ||
           !within(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr)))
    problem = "program headers beyond the end of the file (truncated?)";
  else if (header.e_shnum &&
           (header.e_shentsize != sizeof(Elf64_Shdr) ||
            !within(header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr))))
    problem = "section headers beyond the end of the file (truncated?)";
  if (problem.empty()) {
    std::vector<Elf64_Phdr> segments(header.e_phnum);
    if (!readAt(header.e_phoff, segments.data(),
                segments.size() * sizeof(Elf64_Phdr)))
      problem = "cannot read the program headers";
    for (const Elf64_Phdr &p : segments)
      if (problem.empty() && p.p_type == PT_LOAD && !within(p.p_offset, 1, p.p_filesz))
        problem = "a segment extends beyond the end of the file (truncated?)";
  }
  if (problem.empty() && header.e_shnum) {
    std::vector<Elf64_Shdr> sections(header.e_shnum);
    if (!readAt(header.e_shoff, sections.data(),
                sections.size() * sizeof(Elf64_Shdr)))
      problem = "cannot read the section headers";
    for (const Elf64_Shdr &s : sections)
      if (problem.empty() && s.sh_type != SHT_NOBITS &&
          !within(s.sh_offset, 1, s.sh_size))
        problem = "a section extends beyond the end of the file (truncated?)";
  }
  std::fclose(file);
  return problem.empty() ? problem : std::string(path) + ": " + problem;
}

} // namespace attnrt

#endif // ATTN_RUNTIME_ELFCHECK_H
