// Where a plan will run: a named architecture (compile-only) or a device.
#pragma once

#include <cuda.h>

#include <string>

namespace sgtopk::detail {

struct Target {
  std::string arch;      // "sm_90"
  int sm_count = 0;      // multiprocessors (the device's, or a table value for compile-only)
  int device = -1;       // ordinal, -1 when compile-only
  std::string device_name;
  CUcontext context = nullptr;  // the device's primary context (retained), when bound
};

// With device >= 0: opens the driver, retains the primary context, reads the
// architecture and SM count (arch, when given, must match the device).
// With device < 0: arch (or the fallback) must name an architecture.
Target resolve_target(int device, const char* arch, const std::string& fallback_arch);
void release_target(Target& target);

// The oldest architecture the templates compile for: the packed FP16
// conversion of the coarse keys (cvt.rn.f16x2.f32) needs sm_80.
inline constexpr int kMinArch = 80;

// "sm_90" -> 90; throws SGTOPK_ERROR_INVALID_ARGUMENT on a malformed name or
// one older than kMinArch, before anything is compiled.
int arch_number(const std::string& arch);

}  // namespace sgtopk::detail
