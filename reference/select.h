// The CPU reference of the select contract (CONTRACT.md section 1) and of the
// keys of ALGORITHM.md ("Keys"). Plain, obviously-correct code: the GPU tests
// and `sgtopk selftest` compare the kernels against it.
//
// Contract order: numeric order of the scores, with -0.0 == +0.0, -inf and
// +inf ordinary values, and every NaN (any sign, any payload) below -inf.
// "Value desc in contract order, index asc" is the total order used for the
// expected set (ties at the boundary go to the lower index) and for sorted
// output.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace sgtopk::reference {

// The bits of a float and back (NaN payloads and the sign of zero kept).
inline uint32_t float_bits(float x) { return std::bit_cast<uint32_t>(x); }
inline float float_from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

// Ordered FP32 key: larger key <=> larger value in contract order.
// -0 is canonicalized to +0; sign set -> ~bits, else bits | 0x80000000;
// every NaN -> 0. No number maps to 0 (-inf -> 0x007fffff, +0 -> 0x80000000,
// +inf -> 0xff800000).
uint32_t ordered_key(float x);

// The float whose (uncanonicalized) ordered key is `key`: the inverse of
// ordered_key on numbers. Key 0x7fffffff gives -0.0 (which ordered_key maps to
// 0x80000000); keys below 0x007fffff and above 0xff800000 give NaN patterns.
float float_from_ordered_key(uint32_t key);

// IEEE binary16 bits of the round-to-nearest-even conversion of x, computed
// on bits (no compiler half type). |x| >= 65520 gives +-inf; NaN gives a
// quiet NaN of the same sign; tiny values round to +-0 or a subnormal.
uint16_t float_to_half_bits(float x);
// The exact float value of a binary16 bit pattern.
float half_bits_to_float(uint16_t h);
// 16-bit ordered key of a binary16 pattern: -0 -> +0, sign set -> ~h, else
// h | 0x8000, every NaN -> 0.
uint32_t ordered_key16(uint16_t h);

// 11-bit coarse key (2048 bins): ordered_key16(float_to_half_bits(x)) >> 5.
// Monotone non-decreasing in x. NaN -> bin 0; -inf -> bin 31; +0/-0 -> 1024;
// every |x| >= 65520 shares the +-inf bin (+inf -> 2016). Bins 1..30 and
// 2017..2047 hold no number.
uint32_t coarse_key(float x);
inline constexpr uint32_t kCoarseBins = 2048;
inline constexpr uint32_t kCoarseKeyMinNumber = 31;    // coarse_key(-inf)
inline constexpr uint32_t kCoarseKeyMaxNumber = 2016;  // coarse_key(+inf)

// Inclusive lower endpoint of coarse bin `bin` in value space: the smallest
// non-NaN float x with coarse_key(x) >= bin, so that for every non-NaN x,
//   x >= coarse_bin_lower_endpoint(bin)  <=>  coarse_key(x) >= bin
// (numeric comparison; the endpoint is never +-0, so -0 == +0 is harmless).
//   bin <= 31 (incl. 0): -inf (every number qualifies; NaN is excluded by
//                        the comparison, as it must be: NaN is bin 0 only).
//   bin in 32..2016:     a finite float (the FP16 rounding boundary: values
//                        that round *up* into the bin are included).
//   bin >= 2017:         NaN: no number qualifies, and `x >= NaN` is false
//                        for every x.
float coarse_bin_lower_endpoint(uint32_t bin);

// Exact expected top-K of one row: returns min(len, k) indices ordered by
// (value desc in contract order, index asc). Ties at the boundary go to the
// lower index, NaN is lowest, -0 == +0. Linear time plus O(k log k); fine for
// 1.5M-wide rows. k <= 0 or len <= 0 gives an empty vector.
std::vector<int32_t> select_row(const float* row, int64_t len, int k);

// Full contract check of one output row (the caller prefixes the row id).
// Returns "" when correct, else a message naming the slot and what is wrong,
// e.g. "slot 17: index 5021 not in the expected set (value 0.25, boundary
// value 0.5)".
//  - len >= k: k distinct indices in [0, len) equal to the expected SET of
//    select_row (the tie rule included), and, checked directly as well,
//    min over selected >= max over unselected in contract order.
//  - len < k: every index of [0, len) exactly once in slots [0, len), and -1
//    in every slot of [len, k). (len <= 0: all -1.)
//  - values != nullptr: value slot s of a real index equals row[index]
//    bitwise; PADDING VALUE SLOTS [len, k) MUST BE -inf (bits 0xff800000).
//  - sorted: slots [0, min(len,k)) are ordered by (value desc in contract
//    order, index asc); -0 and +0 are equal values, so ordered by index.
//    Unsorted output may come in any order.
std::string check_select_row(const float* row, int64_t len, int k, const int32_t* indices, const float* values,
                             bool sorted);

}  // namespace sgtopk::reference
