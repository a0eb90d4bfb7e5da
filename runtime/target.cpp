#include "runtime/target.h"

#include <cctype>
#include <charconv>
#include <system_error>

#include "runtime/driver.h"
#include "runtime/error.h"

namespace sgtopk::detail {

int arch_number(const std::string& arch) {
  size_t digits = 0;
  if (arch.rfind("sm_", 0) == 0) {
    while (3 + digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[3 + digits]))) ++digits;
  }
  const bool suffix_ok = 3 + digits == arch.size() || (3 + digits + 1 == arch.size() && arch.back() == 'a');
  if (digits < 2 || !suffix_ok || arch[3] == '0')  // sm_0090 is not sm_90
    invalid_argument("arch '" + arch + "' is invalid: name an architecture like sm_90 (or sm_90a)");
  // from_chars, not stoi: a digit run too long for an int (sm_99999999999)
  // is the caller's mistake, not an internal error.
  int number = 0;
  const char* first = arch.data() + 3;
  const auto [end, ec] = std::from_chars(first, first + digits, number);
  if (ec == std::errc::result_out_of_range)
    invalid_argument("arch '" + arch + "' is invalid: its number is out of range; name an architecture like sm_90 "
                     "(or sm_90a)");
  if (ec != std::errc() || end != first + digits)
    invalid_argument("arch '" + arch + "' is invalid: name an architecture like sm_90 (or sm_90a)");
  if (number < kMinArch)
    invalid_argument("arch '" + arch + "' is not supported: sgtopk needs sm_" + std::to_string(kMinArch) +
                     " or newer (its kernels use sm_80 instructions)");
  return number;
}

namespace {
// Multiprocessor counts used to size workers when compiling without a device.
int default_sm_count(int arch) {
  switch (arch) {
    case 90: return 132;  // H100/H200 SXM
    case 80: return 108;  // A100
    case 89: return 128;
    default: return 132;
  }
}
}  // namespace

Target resolve_target(int device, const char* arch, const std::string& fallback_arch) {
  Target t;
  if (device < 0) {
    t.arch = (arch && *arch) ? arch : fallback_arch;
    t.sm_count = default_sm_count(arch_number(t.arch));
    return t;
  }
  const DriverApi& cu = driver();
  int count = 0;
  check_cuda(cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (device >= count)
    invalid_argument("device " + std::to_string(device) + " does not exist: " + std::to_string(count) + " device(s) present");
  CUdevice dev;
  check_cuda(cu.cuDeviceGet(&dev, device), "cuDeviceGet");
  int major = 0, minor = 0;
  check_cuda(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
  check_cuda(cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
  check_cuda(cu.cuDeviceGetAttribute(&t.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
  char name[256] = {};
  cu.cuDeviceGetName(name, sizeof(name), dev);
  t.device_name = name;
  const std::string own = "sm_" + std::to_string(major * 10 + minor);
  t.arch = (arch && *arch) ? arch : own;
  if (arch_number(t.arch) != major * 10 + minor)
    invalid_argument("arch '" + t.arch + "' does not match device " + std::to_string(device) + " (" + t.device_name + ", " + own + ")");
  check_cuda(cu.cuDevicePrimaryCtxRetain(&t.context, dev), "cuDevicePrimaryCtxRetain");
  t.device = device;
  return t;
}

void release_target(Target& t) {
  if (t.context != nullptr && t.device >= 0) {
    CUdevice dev;
    if (driver().cuDeviceGet(&dev, t.device) == CUDA_SUCCESS) driver().cuDevicePrimaryCtxRelease(dev);
  }
  t.context = nullptr;
}

}  // namespace sgtopk::detail
