// Order-preserving keys (ALGORITHM.md, "Keys").
//  ordered_key: 32-bit, orders exactly like the contract: NaN lowest (key 0),
//               -0 == +0, larger value -> larger key.
//  coarse_key:  11 bits (2048 bins) from the FP16 rounding of the value; only
//               monotone (equal keys for different values are fine), which is
//               all that boundary construction needs (lemma 4.1).
#pragma once
#include "sgtopk/common.cuh"

namespace sgtopk {

constexpr int kCoarseBits = 11;
constexpr int kCoarseBins = 1 << kCoarseBits;
constexpr u32 kCoarseKeyMinNumber = 31u;  // coarse_key(-inf): the lowest bin a number reaches

SGTOPK_DEVICE u32 ordered_key(float x) {
  u32 bits = __float_as_uint(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0u;  // every NaN ranks lowest
  if (bits == 0x80000000u) bits = 0u;                   // -0 equals +0
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

SGTOPK_DEVICE u32 coarse_key(float x) {
  unsigned short half;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(half) : "f"(x));  // |x| >= 65520 -> inf, tiny -> 0 or subnormal
  const u32 bits = half, magnitude = bits & 0x7fffu;
  // Selects, not branches: this runs once per score in the full-row passes.
  // -0 maps like +0; NaN (magnitude above inf's) to bin 0.
  const u32 key16 = ((bits & 0x8000u) != 0u && magnitude != 0u) ? (~bits & 0xffffu) : (magnitude | 0x8000u);
  return magnitude > 0x7c00u ? 0u : key16 >> (16 - kCoarseBits);
}

// The float an ordered key stands for (either zero for the key of 0).
SGTOPK_DEVICE float float_from_ordered_key(u32 key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// The smallest number whose coarse key is >= bin (the bin's inclusive lower
// endpoint in value space), or NaN when no number reaches the bin (so that
// `x >= endpoint` is false for every x). A binary search over ordered keys
// from -inf to +inf, exact by construction because coarse_key is monotone
// there: comparing FP32 scores with it is the same as comparing coarse keys.
// Bins 0..31 (NaN's bin and the ones below -inf's) all give -inf: NaN is no
// number, so callers that can meet bin 0 treat it apart. The device kernels
// use the warp form below; this one is the reference the keys test checks
// both against.
SGTOPK_DEVICE float coarse_bin_lower_endpoint(u32 bin) {
  u32 low = 0x007fffffu, high = 0xff800000u;  // ordered keys of -inf and +inf
  if (coarse_key(float_from_ordered_key(high)) < bin) return __uint_as_float(0x7fc00000u);
  while (low < high) {  // invariant: the answer lies in [low, high]
    const u32 mid = low + (high - low) / 2u;
    if (coarse_key(float_from_ordered_key(mid)) >= bin) high = mid;
    else low = mid + 1u;
  }
  return float_from_ordered_key(low);
}

// The same endpoint found by one whole warp: 32 probes per step instead of
// one (a 32-ary search, about 7 steps instead of 32), so the block waits
// less at the barrier after it. Every lane returns the answer.
SGTOPK_DEVICE float coarse_bin_lower_endpoint_warp(u32 bin) {
  u32 low = 0x007fffffu, high = 0xff800000u;
  if (coarse_key(float_from_ordered_key(high)) < bin) return __uint_as_float(0x7fc00000u);
  const u32 lane = threadIdx.x & 31u;
  while (low < high) {  // invariant: the answer lies in [low, high]; probe 31 is high itself
    const u32 probe = low + static_cast<u32>((static_cast<u64>(high - low) * (lane + 1u)) >> 5);
    const u32 reached = __ballot_sync(0xffffffffu, coarse_key(float_from_ordered_key(probe)) >= bin);
    const int first = __ffs(reached) - 1;  // reached has bit 31 set: the probe at high
    const u32 first_probe = __shfl_sync(0xffffffffu, probe, first);
    const u32 before = __shfl_sync(0xffffffffu, probe, first > 0 ? first - 1 : 0);
    if (first > 0) low = before + 1u;
    high = first_probe;
  }
  return float_from_ordered_key(low);
}

// Two endpoints at once, warp 0 finding the first and warp 1 the second
// (each written by its lane 0); the caller's barrier publishes them.
SGTOPK_DEVICE void coarse_bin_lower_endpoints(u32 bin0, u32 bin1, float& endpoint0, float& endpoint1) {
  const int warp = static_cast<int>(threadIdx.x >> 5);
  if (warp < 2) {
    const float endpoint = coarse_bin_lower_endpoint_warp(warp == 0 ? bin0 : bin1);
    if ((threadIdx.x & 31) == 0) (warp == 0 ? endpoint0 : endpoint1) = endpoint;
  }
}

// A coarse bin cut into at most 1024 equal spans of ordered keys (the fine
// proposal's digits): `low` is the bin's lowest number, `high` the lowest
// number above it (NaN when none). The host reference has the same type.
struct SubBins {
  static constexpr int kDigitBits = 10;
  u32 low_key;
  int shift;

  SGTOPK_DEVICE static SubBins of(float low, float high) {
    const u32 low_key = ordered_key(low);
    const u32 end = high == high ? ordered_key(high) : ordered_key(__int_as_float(0x7f800000)) + 1u;  // past the bin
    const int bits = 32 - __clz(end - low_key - 1u);  // of the largest offset in the bin
    return SubBins{low_key, max_of(0, bits - kDigitBits)};
  }
  SGTOPK_DEVICE u32 digit(float x) const { return (ordered_key(x) - low_key) >> shift; }
  // The lowest number of digit d's span.
  SGTOPK_DEVICE float endpoint(u32 d) const { return float_from_ordered_key(low_key + (d << shift)); }
};

// A candidate's total order key: value first (ordered_key), then lower index
// first. Unique per row, so refinement over it always ends with one element
// per digit group and the tie rule falls out of the same radix rounds.
SGTOPK_DEVICE u64 rank_key(float x, u32 index) {
  return (static_cast<u64>(ordered_key(x)) << 32) | static_cast<u64>(0xffffffffu - index);
}

SGTOPK_DEVICE u32 index_of_rank_key(u64 key) { return 0xffffffffu - static_cast<u32>(key); }

}  // namespace sgtopk
