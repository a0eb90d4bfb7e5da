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

SGTOPK_DEVICE u32 ordered_key(float x) {
  u32 bits = __float_as_uint(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0u;  // every NaN ranks lowest
  if (bits == 0x80000000u) bits = 0u;                   // -0 equals +0
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

SGTOPK_DEVICE u32 coarse_key(float x) {
  unsigned short half;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(half) : "f"(x));  // |x| >= 65520 -> inf, tiny -> 0 or subnormal
  u32 bits = half;
  if ((bits & 0x7fffu) > 0x7c00u) return 0u;
  if (bits == 0x8000u) bits = 0u;
  u32 key16 = (bits & 0x8000u) ? (~bits & 0xffffu) : (bits | 0x8000u);
  return key16 >> (16 - kCoarseBits);
}

// A candidate's total order key: value first (ordered_key), then lower index
// first. Unique per row, so refinement over it always ends with one element
// per digit group and the tie rule falls out of the same radix rounds.
SGTOPK_DEVICE u64 rank_key(float x, u32 index) {
  return (static_cast<u64>(ordered_key(x)) << 32) | static_cast<u64>(0xffffffffu - index);
}

SGTOPK_DEVICE u32 index_of_rank_key(u64 key) { return 0xffffffffu - static_cast<u32>(key); }

}  // namespace sgtopk
