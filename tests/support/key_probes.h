// The probe kernels of the device-key GPU tests (tests/gpu/test_keys_gpu.cpp):
// compiled against the embedded templates by the GPU tests, and by a CPU test
// (test_jit.cpp) so that a template change that breaks them fails in CI too.
#pragma once

namespace sgtopk::testing {

inline constexpr const char* kProbeSource = R"(
#include "sgtopk/util/keys.cuh"
extern "C" __global__ void sgtopk_keys_probe(const float* x, unsigned* ordered, unsigned* coarse, int n,
                                             float* endpoints, float* direct_endpoints,
                                             unsigned* pair_low, unsigned* pair_high) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    ordered[i] = sgtopk::ordered_key(x[i]);
    coarse[i] = sgtopk::coarse_key(x[i]);
    // The packed pair, each value once in either lane (its partner: the
    // next value, so lanes meet every kind of neighbour).
    unsigned low, high;
    sgtopk::coarse_key_pair(x[i], x[(i + 1) % n], low, high);
    pair_low[i] = low;
    sgtopk::coarse_key_pair(x[(i + 1) % n], x[i], low, high);
    pair_high[i] = high;
  }
  if (i < sgtopk::kCoarseBins) {
    endpoints[i] = sgtopk::coarse_bin_lower_endpoint(static_cast<unsigned>(i));
    direct_endpoints[i] = sgtopk::coarse_bin_lower_endpoint_direct(static_cast<unsigned>(i));
  }
}
)";

// Every float bit pattern x, paired with ~x in both lane orders, against the
// scalar device key: counts the mismatches and keeps the first one's bits.
inline constexpr const char* kPairExhaustiveSource = R"(
#include "sgtopk/util/keys.cuh"
extern "C" __global__ void sgtopk_pair_exhaustive(unsigned* mismatches, unsigned* first_bits) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long b = blockIdx.x * blockDim.x + threadIdx.x; b < (1ull << 32); b += stride) {
    const float x = __uint_as_float(static_cast<unsigned>(b)), y = __uint_as_float(~static_cast<unsigned>(b));
    unsigned kx, ky, ky2, kx2;
    sgtopk::coarse_key_pair(x, y, kx, ky);
    sgtopk::coarse_key_pair(y, x, ky2, kx2);
    const unsigned want_x = sgtopk::coarse_key(x), want_y = sgtopk::coarse_key(y);
    if (kx != want_x || kx2 != want_x || ky != want_y || ky2 != want_y) {
      if (atomicAdd(mismatches, 1u) == 0u) *first_bits = static_cast<unsigned>(b);
    }
  }
}
)";

}  // namespace sgtopk::testing
