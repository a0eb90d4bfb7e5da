// Shared support of the CPU and GPU test binaries: seeded RNGs, adversarial
// row families (re-exported from the library), GPU presence, device buffers
// and the matrix-wide contract check.
//
// NOTE: inside namespace sgtopk::testing, GoogleTest's namespace must be
// written ::testing.
#pragma once

#include <gtest/gtest.h>

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "reference/select.h"
#include "reference/row_families.h"

namespace sgtopk::testing {

// ---------------------------------------------------------------- seeds ----

// The seed of a test: SGTOPK_TEST_SEED (decimal or 0x-hex) when set, else a
// fixed base; mixed with `salt` and the running test's full name so that each
// test gets its own stream but reruns are reproducible.
uint64_t test_seed(const std::string& salt = "");

// std::mt19937_64 that remembers its seed. trace() is a line for SCOPED_TRACE
// saying how to reproduce ("seed 0x1234 (salt 'x'); rerun with
// SGTOPK_TEST_SEED=... to vary the base").
class SeededRng {
 public:
  explicit SeededRng(uint64_t seed) : seed_(seed), engine_(seed) {}
  std::mt19937_64& engine() { return engine_; }
  operator std::mt19937_64&() { return engine_; }  // NOLINT: pass where an engine is expected
  uint64_t seed() const { return seed_; }
  std::string trace() const;
  uint64_t operator()() { return engine_(); }

 private:
  uint64_t seed_;
  std::mt19937_64 engine_;
};

// Declares `SeededRng name` seeded by test_seed(salt) and a SCOPED_TRACE that
// prints the seed with every failure in the enclosing scope.
#define SGTOPK_SEEDED_RNG(name, salt)                                            \
  ::sgtopk::testing::SeededRng name(::sgtopk::testing::test_seed(salt));         \
  SCOPED_TRACE(name.trace())

// --------------------------------------------------------- row families ----

// The generators live in the library (reference/row_families.h) so that
// `sgtopk simulate` can use them too; re-exported here for the tests.
// Small text helpers the CPU tests share.
bool contains(const std::string& haystack, const std::string& needle);
std::string read_text(const std::filesystem::path& path);
void write_text(const std::filesystem::path& path, const std::string& text);
// Every regular file below `dir`, sorted (empty when `dir` is missing).
std::vector<std::filesystem::path> files_under(const std::filesystem::path& dir);

using rows::all_row_families;
using rows::family_from_name;
using rows::family_name;
using rows::family_param_name;
using rows::make_row;
using rows::RowFamily;

// --------------------------------------------------------------- the GPU ----

// "" when a CUDA driver and a device are present, else "no GPU: <why>".
std::string gpu_skip_reason();

#define SGTOPK_REQUIRE_GPU()                                                        \
  do {                                                                              \
    const std::string sgtopk_gpu_skip_reason_ = ::sgtopk::testing::gpu_skip_reason(); \
    if (!sgtopk_gpu_skip_reason_.empty()) GTEST_SKIP() << sgtopk_gpu_skip_reason_;  \
  } while (0)

// Device 0's primary context, retained once per process (never released) and
// made current on the calling thread by every call. Throws sgtopk::detail::Error when
// there is no driver.
CUcontext test_context();

// Device memory owned by RAII (cuMemAlloc / cuMemFree in test_context()).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Copies `bytes` (<= size()) to / from the start of the buffer (synchronous).
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;
  // Sets every whole 32-bit word of the buffer to `pattern` (poisoning).
  void fill_u32(uint32_t pattern);

  template <class T>
  void upload(const std::vector<T>& host) { upload(host.data(), host.size() * sizeof(T)); }
  template <class T>
  std::vector<T> download_as(size_t count) const {
    std::vector<T> out(count);
    download(out.data(), count * sizeof(T));
    return out;
  }

  CUdeviceptr ptr() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  void release() noexcept;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Poison written to output buffers before a launch; a float with these bits is
// a NaN and an int32 is negative, so an unwritten slot never passes as valid.
inline constexpr uint32_t kPoison = 0xDEADBEEFu;

// ------------------------------------------------------- checking output ----

// Host copies of one select launch and its outputs.
struct SelectMatrixCheck {
  const float* scores = nullptr;     // [rows][pitch]
  int64_t rows = 0;                  // capacity: outputs hold `rows` rows
  int64_t pitch = 0;                 // elements per scores row
  int64_t width = 0;                 // row length when lengths == nullptr (0: pitch)
  const int32_t* lengths = nullptr;  // [rows], or nullptr: every row has `width`
  const int32_t* starts = nullptr;   // [rows], or nullptr: rows start at 0
  int k = 0;
  int64_t live_rows = -1;            // rows at or past it must be untouched; < 0: all rows
  const int32_t* indices = nullptr;  // [rows][out_pitch], downloaded
  const float* values = nullptr;     // [rows][out_pitch], downloaded, or nullptr when not requested
  int64_t out_pitch = 0;             // 0: k
  uint32_t poison = kPoison;         // the pattern both outputs were filled with before the launch
  bool sorted = false;
  int max_failures = 5;              // stop after this many failing rows
};

// Checks every live row with reference::check_select_row (scores offset by
// its start), that slots [k, out_pitch) of every row and every slot of every
// row >= live_rows still hold exactly `poison` (indices and, if given,
// values). Returns "" or up to max_failures lines "row r: <what>".
std::string check_select_matrix(const SelectMatrixCheck& check);

// The same, positional. lengths == nullptr: every row has length `pitch`.
std::string check_select_matrix(const float* scores, int64_t rows, int64_t pitch, const int32_t* lengths,
                                const int32_t* starts, int k, int64_t live_rows, const int32_t* indices,
                                const float* values, int64_t out_pitch, uint32_t poison, bool sorted);

}  // namespace sgtopk::testing
