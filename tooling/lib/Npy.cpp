//===- Npy.cpp - NumPy .npy files (float32, C order) ----------------------===//
#include "attn/Tooling/Npy.h"
#include "attn/Runtime/InputLimits.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>

using namespace attnrt;
using llvm::createStringError;

static llvm::Error npyError(llvm::StringRef path, const llvm::Twine &what) {
  return createStringError(std::make_error_code(std::errc::invalid_argument),
                           path + ": " + what);
}

/// The value text following `'key':` in the header dict.
static llvm::StringRef headerField(llvm::StringRef header,
                                   llvm::StringRef key) {
  size_t pos = header.find(("'" + key + "'").str());
  if (pos == llvm::StringRef::npos)
    return {};
  llvm::StringRef rest = header.drop_front(pos + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return {};
  return rest.ltrim();
}

llvm::StringRef attnrt::npyDtypeName(NpyDtype dtype) {
  switch (dtype) {
  case NpyDtype::F32:
    return "<f4";
  case NpyDtype::I32:
    return "<i4";
  case NpyDtype::I64:
    return "<i8";
  case NpyDtype::Bool:
    return "|b1";
  case NpyDtype::U8:
    return "|u1";
  }
  return "?";
}

static std::optional<NpyDtype> parseDtype(llvm::StringRef descr) {
  return llvm::StringSwitch<std::optional<NpyDtype>>(descr)
      .Case("'<f4'", NpyDtype::F32)
      .Case("'float32'", NpyDtype::F32)
      .Case("'<i4'", NpyDtype::I32)
      .Case("'int32'", NpyDtype::I32)
      .Case("'<i8'", NpyDtype::I64)
      .Case("'int64'", NpyDtype::I64)
      .Case("'|b1'", NpyDtype::Bool)
      .Case("'bool'", NpyDtype::Bool)
      .Case("'|u1'", NpyDtype::U8)
      .Case("'uint8'", NpyDtype::U8)
      .Default(std::nullopt);
}

static int64_t dtypeBytes(NpyDtype dtype) {
  switch (dtype) {
  case NpyDtype::F32:
  case NpyDtype::I32:
    return 4;
  case NpyDtype::I64:
    return 8;
  case NpyDtype::Bool:
  case NpyDtype::U8:
    return 1;
  }
  return 1;
}

llvm::Expected<NpyArray> attnrt::readNpy(llvm::StringRef path, bool f32Only) {
  // Devices and pipes (/dev/zero) never end: only regular files are read.
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return npyError(path, "cannot open: " + ec.message());
  if (!llvm::sys::fs::is_regular_file(status))
    return npyError(path, "not a regular file");
  auto bufferOr = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!bufferOr)
    return npyError(path, "cannot open: " + bufferOr.getError().message());
  return parseNpy((*bufferOr)->getBuffer(), path, f32Only);
}

llvm::Expected<NpyArray> attnrt::parseNpy(llvm::StringRef bytes,
                                          llvm::StringRef path, bool f32Only) {
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return npyError(path, "not an .npy file (bad magic)");
  uint8_t major = bytes[6];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return npyError(path, "truncated header");
    headerLen = 0;
    for (int n = 0; n < 4; ++n)
      headerLen |= size_t(uint8_t(bytes[8 + n])) << (8 * n);
    headerStart = 12;
  } else {
    return npyError(path, "unsupported .npy version " + llvm::Twine(major));
  }
  if (bytes.size() < headerStart + headerLen)
    return npyError(path, "header length " + llvm::Twine(headerLen) +
                              " runs past the end of the file");
  llvm::StringRef header = bytes.substr(headerStart, headerLen);

  llvm::StringRef descr =
      headerField(header, "descr").take_until([](char c) { return c == ','; });
  std::optional<NpyDtype> dtype = parseDtype(descr.trim());
  if (!dtype || (f32Only && *dtype != NpyDtype::F32))
    return npyError(path, "dtype " + descr + " is not " +
                              (f32Only ? "float32 ('<f4')"
                                       : "one of '<f4', '<i4', '<i8', "
                                         "'|b1', '|u1'"));
  llvm::StringRef order = headerField(header, "fortran_order");
  if (order.starts_with("True"))
    return npyError(path, "Fortran-order arrays are not supported; save "
                          "with C order (np.ascontiguousarray)");
  if (!order.starts_with("False"))
    return npyError(path, "malformed header: no fortran_order");
  llvm::StringRef shapeText = headerField(header, "shape");
  if (!shapeText.consume_front("("))
    return npyError(path, "malformed header: no shape");
  shapeText = shapeText.take_until([](char c) { return c == ')'; });

  NpyArray array;
  array.dtype = *dtype;
  llvm::SmallVector<llvm::StringRef> dims;
  shapeText.split(dims, ',', -1, /*KeepEmpty=*/false);
  if (dims.size() > 16)
    return npyError(path, "more than 16 dimensions");
  for (llvm::StringRef dim : dims) {
    int64_t size;
    if (dim.trim().getAsInteger(10, size) || size < 0)
      return npyError(path, "malformed shape entry '" + dim.trim() + "'");
    array.shape.push_back(size);
  }
  // The size is checked against the file before anything is allocated.
  size_t dataStart = headerStart + headerLen;
  size_t available = bytes.size() - dataStart;
  std::optional<int64_t> needed =
      tensorBytes(array.shape.data(), array.shape.size(), dtypeBytes(*dtype));
  if (!needed || uint64_t(*needed) > available)
    return npyError(path, "truncated or corrupt: the shape needs " +
                              (needed ? llvm::Twine(*needed) + " bytes"
                                      : llvm::Twine("more bytes than fit in "
                                                    "64 bits")) +
                              " of data, the file has " +
                              llvm::Twine(available));
  array.bytes.assign(bytes.data() + dataStart,
                     bytes.data() + dataStart + *needed);
  if (*dtype == NpyDtype::F32) {
    array.data.resize(*needed / sizeof(float));
    if (*needed) // an empty shape (a 0 size) has no buffer to copy from
      std::memcpy(array.data.data(), array.bytes.data(), *needed);
  }
  return array;
}

llvm::Error attnrt::writeNpy(llvm::StringRef path,
                             llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<float> data) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int64_t size : shape)
    dict += std::to_string(size) + (shape.size() == 1 ? ",)" : ", ");
  if (shape.size() != 1) {
    if (!shape.empty())
      dict.resize(dict.size() - 2);
    dict += ")";
  }
  dict += ", }";
  // Magic (6) + version (2) + length (2) + dict + '\n', padded to 64 bytes.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return npyError(path, "cannot write: " + ec.message());
  os << "\x93NUMPY" << char(1) << char(0) << char(dict.size() & 0xff)
     << char(dict.size() >> 8) << dict;
  os.write(reinterpret_cast<const char *>(data.data()),
           data.size() * sizeof(float));
  os.close();
  if (os.has_error()) { // e.g. a full disk
    std::string message = os.error().message();
    os.clear_error();
    return npyError(path, "cannot write: " + message);
  }
  return llvm::Error::success();
}
