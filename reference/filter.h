// The CPU reference of the filter contract (CONTRACT.md section 2): top-k
// and/or top-p over one row of logits, as the stable-sort reference of the
// serving engines defines it. Plain, obviously-correct code: the GPU filter
// kernels' tests compare against it.
//
// Order: the select order of reference.h, i.e. logit descending in contract
// order (-0 == +0, NaN below -inf), ties by lower index first.
// Top-k keeps the first k of the order (k <= 0 or k >= vocab: disabled).
// Top-p then applies to those survivors: softmax over the survivors only, in
// double, and the shortest prefix of the order whose mass is >= p is kept
// (p >= 1: disabled; p <= 0: the first token only). At least one token is
// kept whenever vocab >= 1.
//
// Decisions where the contract is silent:
//  - NaN p disables top-p, like p >= 1. A launch cannot validate device
//    arrays, so some answer is needed, and keeping every top-k survivor is
//    what the sort-based engines do (their `cum <= 1 - p` mask is all false)
//    and the harmless one (it samples the unfiltered distribution).
//  - Softmax weights: a finite logit x gets exp(x - max); -inf and NaN get 0
//    (never NaN). When the largest survivor is +inf, the +inf survivors share
//    the mass equally and all else gets 0 (the limit of the softmax).
//  - No mass at all (top-p enabled, survivors all -inf and/or NaN, e.g. an
//    all -inf row): the first token of the order is kept, so "at least one"
//    holds; the mask leaves it untouched, so an all -inf row stays all -inf.
//    Every probability of such a row is 0.
//  - NaN logits rank below -inf and carry no mass, so top-p keeps one only
//    in a row with no mass whose survivors are all NaN; top-k (alone) keeps
//    NaN logits only when fewer than k tokens are numbers, as select does.
//  - In a row with mass, the shortest prefix ends on a token with positive
//    mass: -inf and NaN tokens never extend it (outside the ambiguity below).
//  - Temperature T: a finite T > 0 divides every logit in float (IEEE
//    division, correctly rounded, as the kernels do) before the order and the
//    softmax, so logits whose quotients round equal are a tie; the kept
//    entries of a mask are still the caller's unscaled logits. Any other T
//    (<= 0, NaN, +inf) is greedy: only the first token of the unscaled order
//    is kept, as engines treat T = 0 (docs/filter-design.md).
//  - bf16 and fp16 logits widen to float exactly; their reference is that of
//    the widened row.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace sgtopk::reference {

// Relative tolerance on the cumulative mass at the top-p boundary within
// which the contract lets a kernel keep either neighbouring count.
inline constexpr double kFilterMassTolerance = 1e-6;

inline bool top_k_enabled(int k, int64_t vocab) { return k > 0 && k < vocab; }
inline bool top_p_enabled(float p) { return p < 1.0f; }  // false for NaN
inline bool temperature_scales(float t) { return t > 0.0f && t < std::numeric_limits<float>::infinity(); }

// Everything the reference knows about one row.
struct FilterRowReference {
  // The survivors of top-k, in filter order (all of the row when top-k is off).
  std::vector<int32_t> order;
  // Per survivor slot: its softmax probability over the survivors only (as
  // top-p uses it), rounded to float. All 0 in a row with no mass.
  std::vector<float> probabilities;
  // The reference keeps order[0, count).
  int64_t count = 0;
  // Ascending consecutive counts a kernel may keep: every c whose boundary
  // answers some mass within kFilterMassTolerance relative of p's (the mass
  // of order[0, c) at least target - slack, of order[0, c - 1) at most
  // target + slack). Usually `count` alone; its neighbours where the
  // boundary token's own mass is below 2e-6 * p; many only where top-p ends
  // in a tail of tokens each far lighter than that (p = 0.999999 past a
  // dominant token), which no float32 softmax resolves.
  std::vector<int64_t> acceptable_counts;

  std::vector<int32_t> kept() const { return {order.begin(), order.begin() + count}; }
  std::vector<float> kept_probabilities() const {
    return {probabilities.begin(), probabilities.begin() + count};
  }
};

// The reference for one row of `vocab` logits at temperature T (1: none).
// vocab <= 0 gives an empty result (count 0, no acceptable count).
FilterRowReference filter_row_reference(const float* logits, int64_t vocab, int k, float p, float temperature = 1.0f);

// The kept indices in filter order (filter_row_reference(...).kept()).
std::vector<int32_t> filter_row(const float* logits, int64_t vocab, int k, float p, float temperature = 1.0f);

// The row the order and the softmax see: each logit divided by T in float
// (a copy of the row when T is 1 or does not scale).
std::vector<float> scaled_row(const float* logits, int64_t vocab, float temperature);

// bf16 and fp16 bit patterns widened to float (exact: every value, infinity
// and NaN of the narrow type is a float).
float bf16_to_float(uint16_t bits);
float fp16_to_float(uint16_t bits);
std::vector<float> widen_bf16(const uint16_t* bits, int64_t n);
std::vector<float> widen_fp16(const uint16_t* bits, int64_t n);

// The in-place mask applied to a copy of the row: entries not in `kept` set
// to mask_value, kept entries untouched (bitwise).
std::vector<float> masked_row(const float* logits, int64_t vocab, const std::vector<int32_t>& kept,
                              float mask_value = -std::numeric_limits<float>::infinity());

// Checks of a kernel's output for one row; "" when it is acceptable, else a
// message. A kernel may keep order[0, c) for any acceptable count c.
//  - candidates: `count` indices, in filter order, equal to order[0, count).
//  - mask: the row equals masked_row(..., order[0, c), mask_value) bitwise
//    for some acceptable c.
// ---- the candidate and sample outputs (SGTOPK_FILTER_CANDIDATES,
// SGTOPK_FILTER_SAMPLE) over a kept set, kept = order[0, count) for a count
// the contract accepts. They use the kernels' own mass, so that the host
// emulator compares them exactly: a scaled logit x weighs
// filter_mass_units(x, top), expf(x - top) in float rounded to units of
// 2^-40 (top the first kept token's scaled logit; with top = +inf each +inf
// weighs one unit and all else 0; -inf and NaN weigh 0). Z is the kept
// set's sum, each probability m / Z in double rounded to float (0 when Z is
// 0). The sampled token is the first kept token whose cumulative mass
// exceeds floor(u * Z), u = philox's draw from (seed, stream) (the kept
// set's first token when Z is 0). On the GPU expf may differ from the host's
// in the last place: compare probabilities there with a tolerance, tokens by
// membership and distribution.
uint64_t filter_mass_units(float x, float top);

struct FilterKeptOutputs {
  std::vector<float> logits;         // per kept token: its logit / T (as it is for a greedy T)
  std::vector<uint64_t> mass;        // per kept token: filter_mass_units
  std::vector<float> probabilities;  // per kept token: mass / Z
  uint64_t total = 0;                // Z
  int32_t sampled = -1;              // the sampled token's index (-1: empty kept set)
};
// `logits` and `temperature` as for filter_row_reference; `kept` in filter
// order. stream: the row's index where one seed serves the batch, else 0.
FilterKeptOutputs filter_kept_outputs(const float* logits, int64_t vocab, float temperature,
                                      const std::vector<int32_t>& kept, uint64_t seed, uint64_t stream);

std::string check_filter_candidates(const float* logits, int64_t vocab, int k, float p, const int32_t* indices,
                                    int64_t count, float temperature = 1.0f);
std::string check_filter_mask(const float* logits, int64_t vocab, int k, float p, const float* masked,
                              float mask_value = -std::numeric_limits<float>::infinity(), float temperature = 1.0f);

}  // namespace sgtopk::reference
