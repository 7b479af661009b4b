//===- Safetensors.cpp - weights in the safetensors format ----------------===//
#include "attn/Runtime/Safetensors.h"
#include "attn/Runtime/InputLimits.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cstring>

using namespace attnrt;
using llvm::formatv;

static llvm::Error fail(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

static std::optional<SafetensorsDtype> parseDtype(llvm::StringRef s) {
  return llvm::StringSwitch<std::optional<SafetensorsDtype>>(s)
      .Case("F32", SafetensorsDtype::F32)
      .Case("F16", SafetensorsDtype::F16)
      .Case("BF16", SafetensorsDtype::BF16)
      .Case("F64", SafetensorsDtype::F64)
      .Default(std::nullopt);
}

static uint64_t elementBytes(SafetensorsDtype dtype) {
  switch (dtype) {
  case SafetensorsDtype::F32:
    return 4;
  case SafetensorsDtype::F16:
  case SafetensorsDtype::BF16:
    return 2;
  case SafetensorsDtype::F64:
    return 8;
  }
  return 0;
}

static std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  return s + "]";
}

/// One header entry; errors name the tensor.
static llvm::Expected<SafetensorsEntry>
parseEntry(llvm::StringRef path, llvm::StringRef name,
           const llvm::json::Value &value, uint64_t dataSize) {
  auto bad = [&](const llvm::Twine &why) {
    return fail(path, "tensor '" + name + "': " + why);
  };
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return bad("header entry is not an object");
  SafetensorsEntry entry;
  std::optional<llvm::StringRef> dtype = object->getString("dtype");
  if (!dtype)
    return bad("no \"dtype\" string");
  std::optional<SafetensorsDtype> parsed = parseDtype(*dtype);
  if (!parsed)
    return bad("dtype " + *dtype + " is not supported (F32, F16, BF16, F64)");
  entry.dtype = *parsed;
  const llvm::json::Array *shape = object->getArray("shape");
  if (!shape)
    return bad("no \"shape\" array");
  // The element count, guarded against overflow by a 2^48 cap per tensor.
  uint64_t count = 1;
  for (const llvm::json::Value &dim : *shape) {
    std::optional<int64_t> d = dim.getAsInteger();
    if (!d || *d < 0)
      return bad("shape entries must be non-negative integers");
    entry.shape.push_back(*d);
    if (*d != 0 && count > (uint64_t(1) << 48) / uint64_t(*d))
      return bad("shape " + shapeText(entry.shape) + " is too large");
    count *= uint64_t(*d);
  }
  const llvm::json::Array *offsets = object->getArray("data_offsets");
  if (!offsets || offsets->size() != 2)
    return bad("no \"data_offsets\" [begin, end] pair");
  std::optional<int64_t> begin = (*offsets)[0].getAsInteger();
  std::optional<int64_t> end = (*offsets)[1].getAsInteger();
  if (!begin || !end || *begin < 0 || *end < *begin)
    return bad("data_offsets must be integers with 0 <= begin <= end");
  entry.begin = *begin;
  entry.end = *end;
  if (entry.end > dataSize)
    return bad(formatv("data_offsets [{0}, {1}] run past the end of the data "
                       "({2} bytes): the file is truncated or the header lies",
                       entry.begin, entry.end, dataSize));
  uint64_t expected = count * elementBytes(entry.dtype);
  if (entry.end - entry.begin != expected)
    return bad(formatv("shape {0} of {1} needs {2} bytes, data_offsets give "
                       "{3}",
                       shapeText(entry.shape), *dtype, expected,
                       entry.end - entry.begin));
  return entry;
}

llvm::Expected<SafetensorsFile> SafetensorsFile::open(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path, buffer.getError().message());
  return fromBuffer(std::move(*buffer), path);
}

llvm::Expected<SafetensorsFile>
SafetensorsFile::fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                            llvm::StringRef path) {
  SafetensorsFile file;
  file.path = path.str();
  file.buffer = std::move(buffer);
  llvm::StringRef bytes = file.buffer->getBuffer();
  if (bytes.size() < 8)
    return fail(path, formatv("{0} bytes is too short for a safetensors "
                              "header length",
                              bytes.size()));
  uint64_t headerSize =
      llvm::support::endian::read64le(bytes.data());
  if (headerSize > bytes.size() - 8)
    return fail(path, formatv("header length {0} runs past the end of the "
                              "file ({1} bytes)",
                              headerSize, bytes.size()));
  file.dataStart = 8 + headerSize;
  uint64_t dataSize = bytes.size() - file.dataStart;
  // llvm::json::parse recurses once per nesting level.
  llvm::StringRef headerText = bytes.substr(8, headerSize);
  if (findExcessNesting({headerText.data(), headerText.size()},
                        kMaxNestingDepth,
                        NestingSyntax::Json) != std::string_view::npos)
    return fail(
        path, formatv("header nests deeper than {0} levels", kMaxNestingDepth));
  llvm::Expected<llvm::json::Value> header = llvm::json::parse(headerText);
  if (!header)
    return fail(path, "header is not valid JSON: " +
                          llvm::toString(header.takeError()));
  const llvm::json::Object *object = header->getAsObject();
  if (!object)
    return fail(path, "header is not a JSON object");
  std::vector<std::pair<uint64_t, std::string>> ranges;
  for (const auto &[key, value] : *object) {
    if (key == "__metadata__")
      continue;
    llvm::Expected<SafetensorsEntry> entry =
        parseEntry(path, key, value, dataSize);
    if (!entry)
      return entry.takeError();
    ranges.push_back({entry->begin, key.str()});
    file.entries[key] = std::move(*entry);
  }
  // Tensors may not share bytes (the format also forbids holes; those are
  // harmless to a reader and not checked).
  llvm::sort(ranges);
  for (size_t i = 1; i < ranges.size(); ++i) {
    const SafetensorsEntry &previous = file.entries[ranges[i - 1].second];
    if (previous.end > ranges[i].first && previous.end > previous.begin)
      return fail(path, "tensors '" + ranges[i - 1].second + "' and '" +
                            ranges[i].second + "' overlap");
  }
  return file;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> result;
  for (const auto &entry : entries)
    result.push_back(entry.getKey().str());
  llvm::sort(result);
  return result;
}

std::optional<std::vector<int64_t>>
SafetensorsFile::shape(llvm::StringRef name) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return std::nullopt;
  return it->second.shape;
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else { // subnormal: scale by 2^-24
    float value = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -value : value;
  }
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

llvm::Expected<std::vector<float>>
SafetensorsFile::read(llvm::StringRef name,
                      llvm::ArrayRef<int64_t> shape) const {
  auto it = entries.find(name);
  if (it == entries.end())
    return fail(path, "no tensor '" + name + "' (expected shape " +
                          shapeText(shape) + ")");
  const SafetensorsEntry &entry = it->second;
  if (llvm::ArrayRef<int64_t>(entry.shape) != shape)
    return fail(path, "tensor '" + name + "' has shape " +
                          shapeText(entry.shape) + ", expected " +
                          shapeText(shape));
  const char *data = buffer->getBufferStart() + dataStart + entry.begin;
  size_t count = (entry.end - entry.begin) / elementBytes(entry.dtype);
  std::vector<float> result(count);
  using namespace llvm::support::endian;
  for (size_t i = 0; i < count; ++i) {
    switch (entry.dtype) {
    case SafetensorsDtype::F32: {
      uint32_t bits = read32le(data + 4 * i);
      std::memcpy(&result[i], &bits, 4);
      break;
    }
    case SafetensorsDtype::F64: {
      uint64_t bits = read64le(data + 8 * i);
      double d;
      std::memcpy(&d, &bits, 8);
      result[i] = float(d);
      break;
    }
    case SafetensorsDtype::F16:
      result[i] = halfToFloat(read16le(data + 2 * i));
      break;
    case SafetensorsDtype::BF16: {
      uint32_t bits = uint32_t(read16le(data + 2 * i)) << 16;
      std::memcpy(&result[i], &bits, 4);
      break;
    }
    }
  }
  return result;
}

llvm::Error attnrt::writeSafetensors(llvm::StringRef path,
                                     llvm::ArrayRef<NamedTensor> tensors) {
  std::vector<const NamedTensor *> sorted;
  for (const NamedTensor &t : tensors)
    sorted.push_back(&t);
  llvm::sort(sorted, [](const NamedTensor *a, const NamedTensor *b) {
    return a->name < b->name;
  });
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const NamedTensor *t : sorted) {
    uint64_t bytes = t->data.size() * 4;
    header[t->name] = llvm::json::Object{
        {"dtype", "F32"},
        {"shape", llvm::json::Array(t->shape)},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json;
  llvm::raw_string_ostream(json) << llvm::json::Value(std::move(header));
  // Pad with spaces so the data starts 8-byte aligned, as the reference
  // writer does.
  json.append((8 - json.size() % 8) % 8, ' ');
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail(path, ec.message());
  char length[8];
  llvm::support::endian::write64le(length, json.size());
  os.write(length, 8);
  os << json;
  for (const NamedTensor *t : sorted)
    for (float f : t->data) {
      char le[4];
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      llvm::support::endian::write32le(le, bits);
      os.write(le, 4);
    }
  os.close();
  if (os.has_error()) { // e.g. a full disk; cleared, or LLVM aborts
    std::string message = os.error().message();
    os.clear_error();
    return fail(path, message);
  }
  return llvm::Error::success();
}
