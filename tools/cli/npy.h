// NumPy .npy files (format versions 1 to 3), as numpy.save and torch users
// write them: little-endian float32, int32 or int64, C order. What `sgtopk
// replay` reads and `sgtopk capture` writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sgtopk::cli {

struct NpyArray {
  std::string dtype;            // "<f4", "<i4" or "<i8"
  std::vector<int64_t> shape;
  std::vector<char> data;       // shape's product x the dtype's size, C order
  int64_t elements() const;
};

// Reads `path`; throws UsageError naming the path and what is wrong (not a
// .npy file, another dtype or byte order, Fortran order, a size that does not
// match the shape, more than `max_bytes` of data).
NpyArray read_npy(const std::string& path, uint64_t max_bytes);

// Writes a new file (version 1.0 header); throws UsageError on failure.
void write_npy(const std::string& path, const std::string& dtype, const std::vector<int64_t>& shape, const void* data);

// An integer array (int32 or int64) of `n` values, each in [lo, hi], as int32;
// throws UsageError naming `what` and the path.
std::vector<int32_t> npy_int32_values(const NpyArray& a, const std::string& what, const std::string& path, int64_t n,
                                      int64_t lo, int64_t hi);

// A score matrix (what replay and simulate read): float32, 2-D (rows x
// width), at least one row and column, read into floats in C order; throws
// UsageError naming the path.
struct ScoreMatrix {
  int64_t rows = 0, width = 0;
  std::vector<float> scores;
};
ScoreMatrix read_score_matrix(const std::string& path, uint64_t max_bytes);

// One int32 value per row (lengths, starts), each in [0, width], from an
// int32 or int64 .npy of `rows` values; throws UsageError naming `what`.
std::vector<int32_t> read_row_values(const std::string& path, const std::string& what, int64_t rows, int64_t width);

}  // namespace sgtopk::cli
