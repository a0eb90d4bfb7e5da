#include "tools/cli/npy.h"

#include <cstring>
#include <fstream>

#include "cache/files.h"
#include "tools/cli/commands.h"

namespace sgtopk::cli {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

int64_t dtype_bytes(const std::string& dtype) { return dtype == "<f4" || dtype == "<i4" ? 4 : dtype == "<i8" ? 8 : 0; }

// The value of 'key' in the header's Python dict literal, as written by numpy
// ({'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }).
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw UsageError(path + ": not a .npy file: its header has no '" + key + "'");
  size_t begin = header.find(':', at);
  if (begin == std::string::npos) throw UsageError(path + ": not a .npy file: malformed header");
  ++begin;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  size_t end = begin;
  if (header[begin] == '(') {
    end = header.find(')', begin);
    if (end == std::string::npos) throw UsageError(path + ": not a .npy file: malformed shape");
    return header.substr(begin, end + 1 - begin);
  }
  if (header[begin] == '\'') {
    end = header.find('\'', begin + 1);
    if (end == std::string::npos) throw UsageError(path + ": not a .npy file: malformed header");
    return header.substr(begin + 1, end - begin - 1);
  }
  end = header.find_first_of(",}", begin);
  return header.substr(begin, end - begin);
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& path) {
  std::vector<int64_t> shape;
  size_t i = 1;  // past '('
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size() || text[i] == ')') break;
    int64_t v = 0;
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (v > (INT64_MAX - 9) / 10) throw UsageError(path + ": shape " + text + " is too large");
      v = v * 10 + (text[i++] - '0');
    }
    if (i == start) throw UsageError(path + ": not a .npy file: malformed shape " + text);
    shape.push_back(v);
  }
  return shape;
}

}  // namespace

int64_t NpyArray::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NpyArray read_npy(const std::string& path, uint64_t max_bytes) {
  const detail::FileBytes file = detail::read_regular_file(path, max_bytes + (uint64_t{1} << 20), /*follow_links=*/true);
  if (!file.error.empty()) throw UsageError(path + ": cannot read: " + file.error);
  const std::vector<char>& b = file.bytes;
  if (b.size() < 10 || std::memcmp(b.data(), kMagic, 6) != 0)
    throw UsageError(path + ": not a .npy file (no \\x93NUMPY magic; numpy.save and torch users write them)");
  const int major = static_cast<unsigned char>(b[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(b[8]) | (static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) throw UsageError(path + ": not a .npy file: truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    offset = 12;
  } else {
    throw UsageError(path + ": .npy format version " + std::to_string(major) + " is not supported (1 to 3 are)");
  }
  if (header_len > b.size() - offset) throw UsageError(path + ": not a .npy file: truncated header");
  const std::string header(b.data() + offset, header_len);
  NpyArray a;
  a.dtype = dict_value(header, "descr", path);
  if (dtype_bytes(a.dtype) == 0)
    throw UsageError(path + ": dtype " + a.dtype + " is not supported (scores: float32 '<f4'; lengths and starts: int32 "
                     "'<i4' or int64 '<i8', little-endian)");
  if (dict_value(header, "fortran_order", path) != "False")
    throw UsageError(path + ": Fortran order is not supported (save a C-contiguous array: numpy.ascontiguousarray)");
  a.shape = parse_shape(dict_value(header, "shape", path), path);
  int64_t n = 1;
  for (int64_t d : a.shape) {
    if (d != 0 && n > INT64_MAX / d) throw UsageError(path + ": the shape is too large");
    n *= d;
  }
  const uint64_t bytes = static_cast<uint64_t>(n) * static_cast<uint64_t>(dtype_bytes(a.dtype));
  if (bytes > max_bytes)
    throw UsageError(path + ": " + std::to_string(bytes) + " bytes of data, over the limit of " + std::to_string(max_bytes));
  if (b.size() - offset - header_len != bytes)
    throw UsageError(path + ": the file holds " + std::to_string(b.size() - offset - header_len) +
                     " bytes of data but its shape and dtype need " + std::to_string(bytes));
  a.data.assign(b.begin() + static_cast<std::ptrdiff_t>(offset + header_len), b.end());
  return a;
}

void write_npy(const std::string& path, const std::string& dtype, const std::vector<int64_t>& shape, const void* data) {
  std::string dims;
  int64_t n = 1;
  for (int64_t d : shape) {
    dims += std::to_string(d) + ", ";
    n *= d;
  }
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (3, 4); a 1-D shape keeps its comma: (5,)
  else if (!dims.empty()) dims.resize(dims.size() - 1);
  std::string header = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UsageError(path + ": cannot create it");
  out.write(kMagic, 6);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n * dtype_bytes(dtype)));
  if (!out.flush()) throw UsageError(path + ": cannot write it");
}

std::vector<int32_t> npy_int32_values(const NpyArray& a, const std::string& what, const std::string& path, int64_t n,
                                      int64_t lo, int64_t hi) {
  if (a.dtype == "<f4") throw UsageError(path + ": " + what + " must be integers (int32 or int64), not float32");
  if (a.shape.size() != 1 || a.shape[0] != n)
    throw UsageError(path + ": " + what + " must be a 1-D array of " + std::to_string(n) + " values (one per row)");
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = 0;
    if (a.dtype == "<i4") {
      int32_t x;
      std::memcpy(&x, a.data.data() + 4 * i, 4);
      v = x;
    } else {
      std::memcpy(&v, a.data.data() + 8 * i, 8);
    }
    if (v < lo || v > hi)
      throw UsageError(path + ": " + what + "[" + std::to_string(i) + "] = " + std::to_string(v) + " is out of range " +
                       std::to_string(lo) + ".." + std::to_string(hi));
    out[static_cast<size_t>(i)] = static_cast<int32_t>(v);
  }
  return out;
}

ScoreMatrix read_score_matrix(const std::string& path, uint64_t max_bytes) {
  const NpyArray a = read_npy(path, max_bytes);
  if (a.dtype != "<f4") throw UsageError(path + ": scores must be float32 ('<f4'), not " + a.dtype);
  if (a.shape.size() != 2 || a.shape[0] < 1 || a.shape[1] < 1)
    throw UsageError(path + ": scores must be a 2-D array (rows x width) with at least one row and column");
  ScoreMatrix m;
  m.rows = a.shape[0];
  m.width = a.shape[1];
  m.scores.resize(static_cast<size_t>(m.rows * m.width));
  std::memcpy(m.scores.data(), a.data.data(), a.data.size());
  return m;
}

std::vector<int32_t> read_row_values(const std::string& path, const std::string& what, int64_t rows, int64_t width) {
  return npy_int32_values(read_npy(path, 8 * static_cast<uint64_t>(rows) + 4096), what, path, rows, 0, width);
}

}  // namespace sgtopk::cli
