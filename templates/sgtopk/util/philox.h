// The filter's sampler draw: Philox-4x32-10 (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011), a counter-based generator, and the
// integer draw below a row's kept mass. Plain C++17 with no system header and
// no intrinsic, so the kernels (NVRTC), the host emulator and the CPU
// reference (reference/filter.cpp) compute the very same bits.
#pragma once

#if defined(__CUDACC__)
#define SGTOPK_PHILOX_FN __host__ __device__ constexpr
#else
#define SGTOPK_PHILOX_FN constexpr
#endif

namespace sgtopk {
namespace philox {

typedef unsigned int u32;
typedef unsigned long long u64;

struct U32x4 {
  u32 v[4];
};

// One Philox-4x32 round and the key schedule (Random123's constants).
SGTOPK_PHILOX_FN U32x4 round4x32(U32x4 c, u32 k0, u32 k1) {
  const u64 p0 = static_cast<u64>(0xD2511F53u) * c.v[0], p1 = static_cast<u64>(0xCD9E8D57u) * c.v[2];
  const u32 hi0 = static_cast<u32>(p0 >> 32), lo0 = static_cast<u32>(p0);
  const u32 hi1 = static_cast<u32>(p1 >> 32), lo1 = static_cast<u32>(p1);
  return U32x4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
}

// Philox-4x32-10 of `counter` under the 64-bit `key`.
SGTOPK_PHILOX_FN U32x4 philox4x32_10(U32x4 counter, u64 key) {
  u32 k0 = static_cast<u32>(key), k1 = static_cast<u32>(key >> 32);
  for (int i = 0; i < 10; ++i) {
    counter = round4x32(counter, k0, k1);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return counter;
}

// 64 random bits for (seed, stream): the first two words of the block at
// counter (stream, 0, 0, 0) under key seed.
SGTOPK_PHILOX_FN u64 random64(u64 seed, u64 stream) {
  const U32x4 out = philox4x32_10(U32x4{{static_cast<u32>(stream), static_cast<u32>(stream >> 32), 0u, 0u}}, seed);
  return (static_cast<u64>(out.v[1]) << 32) | out.v[0];
}

// floor(u * total) for u = bits / 2^64 in [0, 1): the high word of the
// 128-bit product, by 32-bit halves (no __int128, no __umul64hi).
SGTOPK_PHILOX_FN u64 mul_high64(u64 a, u64 b) {
  const u64 a_lo = a & 0xffffffffull, a_hi = a >> 32, b_lo = b & 0xffffffffull, b_hi = b >> 32;
  const u64 ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
  const u64 mid = (ll >> 32) + (lh & 0xffffffffull) + (hl & 0xffffffffull);
  return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

// The sampler's draw for a row: floor(u * total) with u from (seed, stream),
// in 0 .. total - 1 (0 when total is 0). The token sampled is the first kept
// token in filter order at which the cumulative integer mass exceeds it.
SGTOPK_PHILOX_FN u64 sample_draw(u64 seed, u64 stream, u64 total) { return mul_high64(random64(seed, stream), total); }

}  // namespace philox
}  // namespace sgtopk
