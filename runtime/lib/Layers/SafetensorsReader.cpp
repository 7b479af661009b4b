//===- SafetensorsReader.cpp - safetensors files, free of LLVM ------------===//
#include "attn/Runtime/SafetensorsReader.h"
#include "attn/Runtime/InputLimits.h"
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace attnrt;
using nlohmann::json;

namespace {
bool parseDtype(const std::string &s, SafetensorsDtype &dtype) {
  if (s == "F32")
    dtype = SafetensorsDtype::F32;
  else if (s == "F16")
    dtype = SafetensorsDtype::F16;
  else if (s == "BF16")
    dtype = SafetensorsDtype::BF16;
  else if (s == "F64")
    dtype = SafetensorsDtype::F64;
  else
    return false;
  return true;
}

uint64_t elementBytes(SafetensorsDtype dtype) {
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

/// A JSON number that is a non-negative integer (as the format's shapes
/// and offsets are), read without nlohmann's throwing accessors.
bool nonNegativeInteger(const json &value, uint64_t &into) {
  if (value.is_number_unsigned()) {
    into = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    into = uint64_t(value.get<int64_t>());
    return true;
  }
  return false;
}

uint64_t read64le(const char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | uint8_t(p[i]);
  return v;
}
uint32_t read32le(const char *p) {
  return uint32_t(uint8_t(p[0])) | uint32_t(uint8_t(p[1])) << 8 |
         uint32_t(uint8_t(p[2])) << 16 | uint32_t(uint8_t(p[3])) << 24;
}
uint16_t read16le(const char *p) {
  return uint16_t(uint8_t(p[0]) | uint8_t(p[1]) << 8);
}

float halfToFloat(uint16_t h) {
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

/// One header entry; errors name the tensor.
Status parseEntry(const std::string &path, const std::string &name,
                  const json &value, uint64_t dataSize,
                  SafetensorsEntry &entry) {
  auto bad = [&](const std::string &why) {
    return Status::error(path + ": tensor '" + name + "': " + why);
  };
  if (!value.is_object())
    return bad("header entry is not an object");
  auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string())
    return bad("no \"dtype\" string");
  const std::string &dtypeName = dtype->get_ref<const std::string &>();
  if (!parseDtype(dtypeName, entry.dtype))
    return bad("dtype " + dtypeName +
               " is not supported (F32, F16, BF16, F64)");
  auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array())
    return bad("no \"shape\" array");
  // The element count, guarded against overflow by a 2^48 cap per tensor.
  uint64_t count = 1;
  for (const json &dim : *shape) {
    uint64_t d;
    if (!nonNegativeInteger(dim, d) || d > (uint64_t(1) << 62))
      return bad("shape entries must be non-negative integers");
    entry.shape.push_back(int64_t(d));
    if (d != 0 && count > (uint64_t(1) << 48) / d)
      return bad("shape " + shapeText(entry.shape) + " is too large");
    count *= d;
  }
  auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2)
    return bad("no \"data_offsets\" [begin, end] pair");
  if (!nonNegativeInteger((*offsets)[0], entry.begin) ||
      !nonNegativeInteger((*offsets)[1], entry.end) || entry.end < entry.begin)
    return bad("data_offsets must be integers with 0 <= begin <= end");
  if (entry.end > dataSize)
    return bad("data_offsets [" + std::to_string(entry.begin) + ", " +
               std::to_string(entry.end) + "] run past the end of the data (" +
               std::to_string(dataSize) +
               " bytes): the file is truncated or the header lies");
  uint64_t expected = count * elementBytes(entry.dtype);
  if (entry.end - entry.begin != expected)
    return bad("shape " + shapeText(entry.shape) + " of " + dtypeName +
               " needs " + std::to_string(expected) +
               " bytes, data_offsets give " +
               std::to_string(entry.end - entry.begin));
  return Status::ok();
}
} // namespace

SafetensorsReader::~SafetensorsReader() {
  if (mapping)
    munmap(mapping, size);
}

Status SafetensorsReader::open(const std::string &path,
                               std::unique_ptr<SafetensorsReader> &reader) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": " + std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  std::unique_ptr<SafetensorsReader> file(new SafetensorsReader());
  file->path = path;
  file->size = uint64_t(info.st_size);
  if (file->size) {
    void *mapped =
        mmap(nullptr, file->size, PROT_READ, MAP_PRIVATE, fd, /*offset=*/0);
    if (mapped == MAP_FAILED) {
      ::close(fd);
      return Status::error(path + ": " + std::strerror(errno));
    }
    file->mapping = mapped;
    file->bytes = static_cast<const char *>(mapped);
  }
  ::close(fd);
  if (Status s = file->parse(); s.failed())
    return s;
  reader = std::move(file);
  return Status::ok();
}

Status SafetensorsReader::fromBytes(std::string bytes, const std::string &path,
                                    std::unique_ptr<SafetensorsReader> &reader) {
  std::unique_ptr<SafetensorsReader> file(new SafetensorsReader());
  file->path = path;
  file->owned = std::move(bytes);
  file->bytes = file->owned.data();
  file->size = file->owned.size();
  if (Status s = file->parse(); s.failed())
    return s;
  reader = std::move(file);
  return Status::ok();
}

Status SafetensorsReader::parse() {
  auto fail = [&](const std::string &message) {
    return Status::error(path + ": " + message);
  };
  if (size < 8)
    return fail(std::to_string(size) +
                " bytes is too short for a safetensors header length");
  uint64_t headerSize = read64le(bytes);
  if (headerSize > size - 8)
    return fail("header length " + std::to_string(headerSize) +
                " runs past the end of the file (" + std::to_string(size) +
                " bytes)");
  dataStart = 8 + headerSize;
  uint64_t dataSize = size - dataStart;
  std::string_view headerText(bytes + 8, headerSize);
  // Deeply nested JSON is no safetensors header; refuse it before parsing.
  if (findExcessNesting(headerText, kMaxNestingDepth, NestingSyntax::Json) !=
      std::string_view::npos)
    return fail("header nests deeper than " +
                std::to_string(kMaxNestingDepth) + " levels");
  json header = json::parse(headerText.begin(), headerText.end(),
                            /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded())
    return fail("header is not valid JSON");
  if (!header.is_object())
    return fail("header is not a JSON object");
  std::vector<std::pair<uint64_t, std::string>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      continue;
    SafetensorsEntry entry;
    if (Status s = parseEntry(path, it.key(), it.value(), dataSize, entry);
        s.failed())
      return s;
    ranges.push_back({entry.begin, it.key()});
    entries[it.key()] = std::move(entry);
  }
  // Tensors may not share bytes (the format also forbids holes; those are
  // harmless to a reader and not checked).
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    const SafetensorsEntry &previous = entries[ranges[i - 1].second];
    if (previous.end > ranges[i].first && previous.end > previous.begin)
      return fail("tensors '" + ranges[i - 1].second + "' and '" +
                  ranges[i].second + "' overlap");
  }
  return Status::ok();
}

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> result;
  for (const auto &entry : entries)
    result.push_back(entry.first);
  return result;
}

const SafetensorsEntry *
SafetensorsReader::find(const std::string &name) const {
  auto it = entries.find(name);
  return it == entries.end() ? nullptr : &it->second;
}

Status SafetensorsReader::read(const std::string &name,
                               const std::vector<int64_t> &shape,
                               std::vector<float> &result) const {
  const SafetensorsEntry *entry = find(name);
  if (!entry)
    return Status::error(path + ": no tensor '" + name + "' (expected shape " +
                         shapeText(shape) + ")");
  if (entry->shape != shape)
    return Status::error(path + ": tensor '" + name + "' has shape " +
                         shapeText(entry->shape) + ", expected " +
                         shapeText(shape));
  const char *data = bytes + dataStart + entry->begin;
  size_t count = (entry->end - entry->begin) / elementBytes(entry->dtype);
  result.resize(count);
  for (size_t i = 0; i < count; ++i) {
    switch (entry->dtype) {
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
  return Status::ok();
}
