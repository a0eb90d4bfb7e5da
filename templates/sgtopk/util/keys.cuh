// Order-preserving keys (ALGORITHM.md, "Keys").
//  ordered_key: 32-bit, orders exactly like the contract: NaN lowest (key 0),
//               -0 == +0, larger value -> larger key.
//  coarse_key:  11 bits (2048 bins) from the FP16 rounding of the value; only
//               monotone (equal keys for different values are fine), which is
//               all that boundary construction needs (lemma 4.1).
#pragma once
#include "sgtopk/util/common.cuh"

namespace sgtopk {

constexpr u32 kCoarseKeyMinNumber = 31u;  // coarse_key(-inf): the lowest bin a number reaches
constexpr u32 kCoarseKeyMaxNumber = 2016u;  // coarse_key(+inf): the highest bin a number reaches

SGTOPK_DEVICE u32 ordered_key(float x) {
  u32 bits = __float_as_uint(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0u;  // every NaN ranks lowest
  if (bits == 0x80000000u) bits = 0u;                   // -0 equals +0
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// ordered_key in selects, no branch: the same key for every float (checked
// over all 2^32), for passes whose elements should interleave; it holds
// more registers live, which spilled the select split kernel.
SGTOPK_DEVICE u32 ordered_key_by_selects(float x) {
  const u32 bits = x == x ? __float_as_uint(x + 0.0f) : 0xffffffffu;  // x + 0: -0 becomes +0; a NaN: all ones, key 0
  return bits ^ (static_cast<u32>(static_cast<int>(bits) >> 31) | 0x80000000u);
}

SGTOPK_DEVICE u32 coarse_key(float x) {
  const unsigned short half = hw::f16_bits(x);  // |x| >= 65520 -> inf, tiny -> 0 or subnormal
  const u32 bits = half, magnitude = bits & 0x7fffu;
  // Selects, not branches: this runs once per score in the full-row passes.
  // -0 maps like +0; NaN (magnitude above inf's) to bin 0.
  const u32 key16 = ((bits & 0x8000u) != 0u && magnitude != 0u) ? (~bits & 0xffffu) : (magnitude | 0x8000u);
  return magnitude > 0x7c00u ? 0u : key16 >> (16 - kCoarseBits);
}

// coarse_key of two scores from one packed conversion: cvt.rn.f16x2.f32 is
// a plain ALU op, where the scalar cvt.rn.f16.f32 goes through the slower
// conversion pipe, and the rest is the same mapping done lane-wise on the
// pair (every sum and difference below stays inside its 16-bit lane). For
// the passes that key every score of a chunk. Bit 15 of a lane of
// `magnitude + 0x7fff` says the magnitude is not zero, of `magnitude +
// 0x03ff` that it is above inf's (NaN); `(x >> 15) * 0xffff` spreads such
// bits over their lanes.
// The pair's keys packed: a's in the low 16 bits, b's in the high 16.
SGTOPK_DEVICE u32 coarse_key_pair_packed(float a, float b) {
  const u32 halves = hw::f16x2_bits(a, b);  // a in the low lane, b in the high one
  const u32 magnitude = halves & 0x7fff7fffu;
  const u32 negative_nonzero = halves & (magnitude + 0x7fff7fffu) & 0x80008000u;
  const u32 nan = (magnitude + 0x03ff03ffu) & 0x80008000u;
  const u32 invert = (negative_nonzero >> 15) * 0xffffu;
  const u32 zero = (nan >> 15) * 0xffffu;
  const u32 key16 = ((halves | 0x80008000u) ^ invert) & ~zero;
  return (key16 >> (16 - kCoarseBits)) & ((1u << kCoarseBits) - 1u) * 0x00010001u;
}
SGTOPK_DEVICE void coarse_key_pair(float a, float b, u32& key_a, u32& key_b) {
  const u32 packed = coarse_key_pair_packed(a, b);
  key_a = packed & 0xffffu;
  key_b = packed >> 16;
}

// A bin of an ordered-key offset, monotone and finer near zero: offsets
// below 128 are their own bins, then 64 bins per power of two (the split's
// row histogram, built by the segments before the lowest candidate's key
// is known to sit anywhere in particular: a bin is at most 1/64 of its offset).
constexpr u32 kLogOffsetBins = 27u * 64u;
SGTOPK_DEVICE u32 log_offset_bin(u32 offset) {
  if (offset < 128u) return offset;
  const u32 e = 31u - static_cast<u32>(__clz(offset));  // 7..31
  return (e - 5u) * 64u + ((offset >> (e - 6u)) & 63u);
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
// number, so callers that can meet bin 0 treat it apart. The kernels use
// the closed form below; this search is what the keys test checks it
// against, besides the host reference.
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

// The same endpoint in closed form, for any thread alone (no search): the
// bin's lowest key16 is bin << 5. Above the sign (the bin starts at a
// magnitude m with its low five bits clear, so m is even) the endpoint is the
// midpoint between FP16 m - 1 and m, which rounds to m (ties to even); at
// m = 0 it is -2^-25, the most negative float rounding to -0. Below the sign
// the bin's most negative FP16 has the odd magnitude m = 0x7fff - (bin << 5),
// and the endpoint is the float just inside the midpoint between m and m + 1
// (that midpoint rounds to m + 1). Every midpoint of two FP16 neighbours is
// exact in FP32, +inf's included (65520, as FP16 magnitude 0x7c00 reads 2^16
// below). The keys test checks it against the searches (device and host)
// for all 2048 bins.
SGTOPK_DEVICE float f16_magnitude_value(u32 m) {  // m <= 0x7c00; 0x7c00 reads as 65536
  const u32 exponent = m >> 10, fraction = m & 0x3ffu;
  return exponent != 0u ? __uint_as_float(((exponent + 112u) << 23) | (fraction << 13))
                        : static_cast<float>(fraction) * 0x1p-24f;
}
SGTOPK_DEVICE float coarse_bin_lower_endpoint_direct(u32 bin) {
  if (bin > kCoarseKeyMaxNumber) return __uint_as_float(0x7fc00000u);
  if (bin <= kCoarseKeyMinNumber) return __uint_as_float(0xff800000u);
  const u32 key16 = bin << (16 - kCoarseBits);
  if (key16 >= 0x8000u) {
    const u32 m = key16 & 0x7fffu;
    if (m == 0u) return -0x1p-25f;
    return 0.5f * (f16_magnitude_value(m - 1u) + f16_magnitude_value(m));
  }
  const u32 m = 0x7fffu - key16;
  const float midpoint = 0.5f * (f16_magnitude_value(m) + f16_magnitude_value(m + 1u));
  return -__uint_as_float(__float_as_uint(midpoint) - 1u);
}

// Two endpoints at once, written by thread 0 (closed form); the caller's
// barrier publishes them.
SGTOPK_DEVICE void coarse_bin_lower_endpoints(u32 bin0, u32 bin1, float& endpoint0, float& endpoint1) {
  if (threadIdx.x == 0) {
    endpoint0 = coarse_bin_lower_endpoint_direct(bin0);
    endpoint1 = coarse_bin_lower_endpoint_direct(bin1);
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
