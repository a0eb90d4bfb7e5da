// The device keys (templates/sgtopk/util/keys.cuh) against the host reference
// (reference/select.h), bit for bit (label `gpu`): ordered_key and
// coarse_key (alone and in packed pairs) on every bin edge, its neighbours and the special values, and
// coarse_bin_lower_endpoint (search and closed form) for all 2048 bins. The two sides are separate
// implementations; every select family's exactness rests on their agreeing.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/driver.h"
#include "runtime/embedded_templates.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/target.h"
#include "support/key_probes.h"
#include "support/test_support.h"

namespace sgtopk::testing {
using namespace sgtopk::detail;
namespace {

// Bin edges and their neighbours, the values the contract singles out, and
// random bit patterns (NaN included).
std::vector<float> probe_values() {
  std::vector<float> v;
  const float inf = std::numeric_limits<float>::infinity();
  for (uint32_t bin = 0; bin < 2048; ++bin) {
    const float e = reference::coarse_bin_lower_endpoint(bin);
    if (std::isnan(e)) continue;
    v.insert(v.end(), {e, std::nextafter(e, -inf), std::nextafter(e, inf)});
  }
  for (uint32_t bits : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
                        0xffffffffu, 0x00000001u, 0x80000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu})
    v.push_back(std::bit_cast<float>(bits));
  for (float x : {65504.0f, 65519.99f, 65520.0f, -65504.0f, -65519.99f, -65520.0f, 0x1p-24f, 0x1p-25f, 0x3p-26f,
                  -0x1p-24f, -0x1p-25f, 1e-40f, -1e-40f})
    v.push_back(x);
  std::mt19937 rng(12345);
  for (int i = 0; i < 200000; ++i) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  return v;
}

// Compiles a probe kernel against the embedded templates (sm_90) and loads it.
CUmodule load_probe(const char* text, const std::string& entry, CUfunction* function) {
  Target target = resolve_target(0, nullptr, "sm_90");
  GeneratedSource source;
  source.name = entry + ".cu";
  source.entry = entry;
  source.text = text;
  for (const EmbeddedHeader& h : embedded_headers()) source.headers.emplace_back(h.name, h.text);
  const std::vector<std::string> options = {"--gpu-architecture=" + target.arch, "--std=c++17", "-default-device"};
  const std::vector<char> cubin = compile_cubin(source, options, target.arch, entry);
  release_target(target);
  const DriverApi& cu = driver();
  CUmodule module = nullptr;
  check_cuda(cu.cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  check_cuda(cu.cuModuleGetFunction(function, module, entry.c_str()), "cuModuleGetFunction");
  return module;
}

TEST(KeysGpu, DeviceKeysAndEndpointsEqualTheHostReference) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  CUfunction function = nullptr;
  const CUmodule module = load_probe(kProbeSource, "sgtopk_keys_probe", &function);
  const DriverApi& cu = driver();

  const std::vector<float> x = probe_values();
  const int n = static_cast<int>(x.size());
  DeviceBuffer d_x(x.size() * 4), d_ordered(x.size() * 4), d_coarse(x.size() * 4), d_endpoints(2048 * 4),
      d_direct_endpoints(2048 * 4), d_pair_low(x.size() * 4), d_pair_high(x.size() * 4);
  d_x.upload(x);
  d_ordered.fill_u32(0xdeadbeefu);
  d_coarse.fill_u32(0xdeadbeefu);
  d_endpoints.fill_u32(0xdeadbeefu);
  d_direct_endpoints.fill_u32(0xdeadbeefu);
  d_pair_low.fill_u32(0xdeadbeefu);
  d_pair_high.fill_u32(0xdeadbeefu);
  CUdeviceptr px = d_x.ptr(), po = d_ordered.ptr(), pc = d_coarse.ptr(), pe = d_endpoints.ptr(),
              pd = d_direct_endpoints.ptr(), pl = d_pair_low.ptr(), ph = d_pair_high.ptr();
  int count = n;
  void* args[] = {&px, &po, &pc, &count, &pe, &pd, &pl, &ph};
  CUlaunchConfig config = {};
  config.gridDimX = static_cast<unsigned>((std::max(n, 2048) + 255) / 256);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 256;
  config.blockDimY = config.blockDimZ = 1;
  check_cuda(cu.cuLaunchKernelEx(&config, function, args, nullptr), "cuLaunchKernelEx");
  check_cuda(cu.cuCtxSynchronize(), "keys probe");

  const std::vector<uint32_t> ordered = d_ordered.download_as<uint32_t>(x.size());
  const std::vector<uint32_t> coarse = d_coarse.download_as<uint32_t>(x.size());
  const std::vector<uint32_t> pair_low = d_pair_low.download_as<uint32_t>(x.size());
  const std::vector<uint32_t> pair_high = d_pair_high.download_as<uint32_t>(x.size());
  const std::vector<float> endpoints = d_endpoints.download_as<float>(2048);
  const std::vector<float> direct_endpoints = d_direct_endpoints.download_as<float>(2048);
  int mismatches = 0;
  for (size_t i = 0; i < x.size() && mismatches < 10; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(x[i]);
    if (ordered[i] != reference::ordered_key(x[i])) {
      ADD_FAILURE() << "ordered_key(0x" << std::hex << bits << "): device 0x" << ordered[i] << ", host 0x"
                    << reference::ordered_key(x[i]);
      ++mismatches;
    }
    for (int lane = 0; lane < 2; ++lane) {
      const uint32_t paired = lane == 0 ? pair_low[i] : pair_high[i];
      if (paired != reference::coarse_key(x[i])) {
        ADD_FAILURE() << "coarse_key_pair(0x" << std::hex << bits << ", " << (lane == 0 ? "low" : "high")
                      << " lane): device " << std::dec << paired << ", host " << reference::coarse_key(x[i]);
        ++mismatches;
      }
    }
    if (coarse[i] != reference::coarse_key(x[i])) {
      ADD_FAILURE() << "coarse_key(0x" << std::hex << bits << "): device " << std::dec << coarse[i] << ", host "
                    << reference::coarse_key(x[i]);
      ++mismatches;
    }
  }
  const auto check_endpoints = [&](const std::vector<float>& device, const char* name) {
    for (uint32_t bin = 0; bin < 2048 && mismatches < 10; ++bin) {
      const float host = reference::coarse_bin_lower_endpoint(bin);
      const bool same = std::isnan(host) ? std::isnan(device[bin])
                                         : std::bit_cast<uint32_t>(host) == std::bit_cast<uint32_t>(device[bin]);
      if (!same) {
        ADD_FAILURE() << name << "(" << bin << "): device " << device[bin] << " (0x" << std::hex
                      << std::bit_cast<uint32_t>(device[bin]) << "), host " << host << " (0x"
                      << std::bit_cast<uint32_t>(host) << ")";
        ++mismatches;
      }
    }
  };
  check_endpoints(endpoints, "coarse_bin_lower_endpoint");
  check_endpoints(direct_endpoints, "coarse_bin_lower_endpoint_direct");
  cu.cuModuleUnload(module);
}

TEST(KeysGpu, PackedPairKeysEqualTheScalarKeyOnEveryFloat) {
  SGTOPK_REQUIRE_GPU();
  test_context();
  CUfunction function = nullptr;
  const CUmodule module = load_probe(kPairExhaustiveSource, "sgtopk_pair_exhaustive", &function);
  const DriverApi& cu = driver();
  DeviceBuffer d_mismatches(4), d_first(4);
  d_mismatches.fill_u32(0u);
  d_first.fill_u32(0u);
  CUdeviceptr pm = d_mismatches.ptr(), pf = d_first.ptr();
  void* args[] = {&pm, &pf};
  CUlaunchConfig config = {};
  config.gridDimX = 4096;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 256;
  config.blockDimY = config.blockDimZ = 1;
  check_cuda(cu.cuLaunchKernelEx(&config, function, args, nullptr), "cuLaunchKernelEx");
  check_cuda(cu.cuCtxSynchronize(), "pair exhaustive");
  const uint32_t mismatches = d_mismatches.download_as<uint32_t>(1)[0];
  EXPECT_EQ(mismatches, 0u) << "first mismatch at float bits 0x" << std::hex << d_first.download_as<uint32_t>(1)[0];
  cu.cuModuleUnload(module);
}

}  // namespace
}  // namespace sgtopk::testing
