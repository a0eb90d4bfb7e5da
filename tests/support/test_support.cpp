#include "tests/support/test_support.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/driver.h"
#include "runtime/error.h"

namespace sgtopk::testing {
using namespace sgtopk::detail;

namespace {

constexpr uint64_t kDefaultBaseSeed = 0x5eed2026c0ffee11ull;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t base_seed() {
  const char* env = std::getenv("SGTOPK_TEST_SEED");
  if (env && *env) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 0);
    if (end && *end == '\0') return static_cast<uint64_t>(v);
  }
  return kDefaultBaseSeed;
}

std::string current_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!info) return "";
  return std::string(info->test_suite_name()) + "." + info->name();
}

std::string hex64(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

// ---------------------------------------------------------------- seeds ----

uint64_t test_seed(const std::string& salt) {
  return splitmix64(base_seed() ^ fnv1a(salt, fnv1a(current_test_name())));
}

std::string SeededRng::trace() const {
  return "rng seed " + hex64(seed_) + " (base seed " + hex64(base_seed()) +
         " mixed with the test name; set SGTOPK_TEST_SEED to change the base)";
}

// --------------------------------------------------------------- the GPU ----

std::string gpu_skip_reason() {
  std::string why;
  if (driver_available(&why)) return "";
  return "no GPU: " + why;
}

CUcontext test_context() {
  static const CUcontext context = [] {
    CUdevice device = 0;
    check_cuda(driver().cuDeviceGet(&device, 0), "cuDeviceGet(0)");
    CUcontext c = nullptr;
    check_cuda(driver().cuDevicePrimaryCtxRetain(&c, device), "cuDevicePrimaryCtxRetain");
    return c;
  }();
  check_cuda(driver().cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return context;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  test_context();
  if (bytes > 0) check_cuda(driver().cuMemAlloc(&ptr_, bytes), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
  other.ptr_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (!ptr_) return;
  try {
    test_context();
    driver().cuMemFree(ptr_);
  } catch (...) {
  }
  ptr_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (bytes > bytes_) {
    invalid_argument("DeviceBuffer::upload of " + std::to_string(bytes) + " bytes into " + std::to_string(bytes_));
  }
  if (bytes == 0) return;
  test_context();
  check_cuda(driver().cuMemcpyHtoD(ptr_, host, bytes), "cuMemcpyHtoD");
  // From pageable memory the copy may still be in flight on return (see fill_u32).
  check_cuda(driver().cuCtxSynchronize(), "cuCtxSynchronize after cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  if (bytes > bytes_) {
    invalid_argument("DeviceBuffer::download of " + std::to_string(bytes) + " bytes from " + std::to_string(bytes_));
  }
  if (bytes == 0) return;
  test_context();
  check_cuda(driver().cuMemcpyDtoH(host, ptr_, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill_u32(uint32_t pattern) {
  if (bytes_ < 4) return;
  test_context();
  check_cuda(driver().cuMemsetD32(ptr_, pattern, bytes_ / 4), "cuMemsetD32");
  // cuMemsetD32 on device memory may return before it is done, and runs on
  // the legacy stream, which non-blocking streams do not wait for: a launch
  // on one could otherwise overtake the poison (or be overwritten by it).
  check_cuda(driver().cuCtxSynchronize(), "cuCtxSynchronize after cuMemsetD32");
}

// ------------------------------------------------------- checking output ----

std::string check_select_matrix(const SelectMatrixCheck& c) {
  if (!c.scores || !c.indices || c.k <= 0 || c.rows < 0 || c.pitch < 0) {
    return "check_select_matrix: bad arguments (null scores/indices or k <= 0)";
  }
  const int64_t out_pitch = c.out_pitch > 0 ? c.out_pitch : c.k;
  if (out_pitch < c.k) return "check_select_matrix: out_pitch < k";
  const int64_t width = c.width > 0 ? c.width : c.pitch;
  const int64_t live = c.live_rows < 0 ? c.rows : std::min(c.live_rows, c.rows);
  std::string report;
  int64_t failures = 0;
  auto add = [&](int64_t r, const std::string& what) {
    if (failures < c.max_failures) report += "row " + std::to_string(r) + ": " + what + "\n";
    ++failures;
  };
  auto untouched = [&](int64_t r, int64_t from, const char* why) {
    const int32_t* idx = c.indices + r * out_pitch;
    const float* val = c.values ? c.values + r * out_pitch : nullptr;
    for (int64_t s = from; s < out_pitch; ++s) {
      uint32_t ib, vb = c.poison;
      std::memcpy(&ib, &idx[s], 4);
      if (val) std::memcpy(&vb, &val[s], 4);
      if (ib != c.poison || vb != c.poison) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "slot %lld was written (%s): index bits 0x%08x, value bits 0x%08x, poison 0x%08x",
                      static_cast<long long>(s), why, ib, vb, c.poison);
        add(r, buf);
        return;
      }
    }
  };
  for (int64_t r = 0; r < c.rows; ++r) {
    if (r >= live) {
      untouched(r, 0, "row at or past live_rows must be untouched");
      continue;
    }
    const int64_t len = c.lengths ? c.lengths[r] : width;
    const int64_t start = c.starts ? c.starts[r] : 0;
    if (len < 0 || start < 0 || start + len > c.pitch) {
      add(r, "test setup error: start " + std::to_string(start) + " + len " + std::to_string(len) + " exceeds pitch " +
                 std::to_string(c.pitch));
      continue;
    }
    const std::string msg =
        reference::check_select_row(c.scores + r * c.pitch + start, len, c.k, c.indices + r * out_pitch,
                                    c.values ? c.values + r * out_pitch : nullptr, c.sorted);
    if (!msg.empty()) {
      add(r, "(len " + std::to_string(len) + ", start " + std::to_string(start) + ", k " + std::to_string(c.k) + ") " +
                 msg);
      continue;
    }
    untouched(r, c.k, "slots past k must be untouched");
  }
  if (failures > c.max_failures) report += "... and " + std::to_string(failures - c.max_failures) + " more failing rows\n";
  if (failures > 0) report = std::to_string(failures) + " of " + std::to_string(c.rows) + " rows wrong:\n" + report;
  return report;
}

std::string check_select_matrix(const float* scores, int64_t rows, int64_t pitch, const int32_t* lengths,
                                const int32_t* starts, int k, int64_t live_rows, const int32_t* indices,
                                const float* values, int64_t out_pitch, uint32_t poison, bool sorted) {
  SelectMatrixCheck c;
  c.scores = scores;
  c.rows = rows;
  c.pitch = pitch;
  c.width = pitch;
  c.lengths = lengths;
  c.starts = starts;
  c.k = k;
  c.live_rows = live_rows;
  c.indices = indices;
  c.values = values;
  c.out_pitch = out_pitch;
  c.poison = poison;
  c.sorted = sorted;
  return check_select_matrix(c);
}

std::vector<std::filesystem::path> files_under(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file()) out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

}  // namespace sgtopk::testing
