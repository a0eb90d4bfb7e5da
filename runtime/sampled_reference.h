// The CPU reference of the sampled route's decisions (ALGORITHM.md, "Phases
// of the sampled route"; paper section 4): which view a row samples, the
// proposed boundary bins tau0 / tau1, how many elements the certification and
// band passes admit, and which route the row takes. A pure function of the
// row, its id and the policy: the GPU kernel must reach the same decisions,
// and `sgtopk simulate` reports them over the row families.
//
// It decides the route only; the selection itself is reference::select_row.
#pragma once

#include <cstdint>

#include "runtime/policy.h"

namespace sgtopk::reference {

// The stride a plan uses in place of `stride` for rank k: unchanged unless
// policy.min_sample_rank > 0, then the largest s <= stride whose primary rank
// ceil(primary_margin * k / s) reaches min_sample_rank (at least 1). Small K
// would otherwise propose from a handful of samples (K = 256 at s = 128:
// q0 = 3) and recover often.
int stride_for_rank(int stride, int k, const SelectSampledPolicy& policy);

// The view block b a plan uses for rank k: policy.view_block, halved while
// b > 1 and the primary rank q0 (the smaller of the two stride classes')
// spans fewer than policy.min_view_blocks blocks (0: never). Scores in one
// block are neighbours, hence correlated on real rows: what certifies a
// proposal is the number of blocks above it, not of samples.
int view_block_for_rank(int k, const SelectSampledPolicy& policy);

// View stride s of a row of length `len` for rank k: stride_wide when
// len >= wide_row_threshold, else stride_narrow; then stride_for_rank.
int sample_stride(int64_t len, int k, const SelectSampledPolicy& policy);

// Phase a_r in [0, stride) of the view i = a_r, a_r + s, a_r + 2s, ... < len.
// It varies with the row so that a periodic structure in the scores cannot
// hide from every row's view at once:
//   a_r = (uint32_t)((row_id * 0x9E3779B97F4A7C15) mod 2^64 >> 40) % stride
// (Fibonacci hashing: the top 24 bits of the 64-bit product, then mod s). The
// GPU kernel uses the same formula with the same row id (the row's index in
// the launch). stride <= 1 gives 0.
uint32_t sample_phase(uint64_t row_id, int stride);

// The view with blocks of b consecutive scores (view_block_for_rank; the
// paper's view is b = 1): view element j sits at
//   a_r * b + (j / b) * (s * b) + j % b,
// so the density stays 1/s and the sample ranks do not change, but a GPU
// gathers b neighbours at once (b = 8: one 32-byte sector instead of eight).
// view_position takes the phase already scaled (a_r * b); view_size counts
// the positions below len.
int64_t view_position(int64_t j, uint32_t phase, int stride, int block);
int64_t view_size(int64_t len, uint32_t phase, int stride, int block);

// Sample rank q = ceil(margin * k / stride): the view count whose boundary is
// proposed. Computed in long double, and a quotient within a relative 1e-12
// of an integer counts as that integer, so margins written in decimal
// (1.5 * 2048 / 128 = 24, 1.75 * 2048 / 64 = 56, 1.1 * 1000 / 10 = 110) are
// not bumped by one by the rounding of the double margin. k <= 0 or
// stride <= 0 gives 0. The host computes q0 and q1 and hands them to the
// kernel, so the GPU never repeats this arithmetic.
int64_t sample_rank(double margin, int k, int stride);

// The fine proposal's trigger (step 1a of decide_sampled_route): a row
// sharpens its boundaries when the view holds at least this many samples in
// tau0's bin and above; sample_rank(fine_proposal_excess * primary_margin,
// k, stride), at least 1, or 0 when policy.fine_proposal_excess is 0 (off).
int64_t fine_proposal_trigger(int k, int stride, const SelectSampledPolicy& policy);

// Which route one row takes, and the counts behind the decision.
struct SampledDecision {
  enum Route {
    kShort,    // len <= k: every valid index is output, no selection needed
    kNoView,   // the view holds fewer than q1 (or q0) samples: exact route
    kPrimary,  // certified by the primary proposal: tau0 admits >= k
    kBand,     // primary underfilled; tau0 plus the band [tau1, tau0) admits >= k
    kExact,    // both underfilled: exact coarse route (recovery)
  };
  Route route = kShort;
  int stride = 0;              // s
  int block = 1;               // b (view_block_for_rank)
  uint32_t phase = 0;          // a_r * b: the first view position
  int64_t q0 = 0, q1 = 0;      // sample ranks of primary_margin, secondary_margin
  int64_t view_size = 0;       // #{j : view_position(j) < len}
  uint32_t primary_bin = 0;    // tau0 (0 when not computed: kShort, kNoView)
  uint32_t secondary_bin = 0;  // tau1 <= tau0 (likewise)
  // The certification and band thresholds: coarse_bin_lower_endpoint(tau0 /
  // tau1), or the fine endpoints when step 1a below applies.
  float primary_low = 0.0f, secondary_low = 0.0f;
  int64_t primary_admitted = 0;  // #{x in row : x >= primary_low} (computed unless kShort / kNoView)
  int64_t band_admitted = 0;     // #{x in row : x >= secondary_low}: the whole candidate set after the
                                 // band pass, primary included (computed for kBand and kExact only)
  // The candidates handed to refinement: primary_admitted (kPrimary),
  // band_admitted (kBand), else 0.
  int64_t admitted() const {
    return route == kPrimary ? primary_admitted : route == kBand ? band_admitted : 0;
  }
};

// Lower-case name of a route ("short", "no_view", "primary", "band", "exact").
const char* route_name(SampledDecision::Route route);

// The sampled route's decisions for one row of `len` scores (k >= 1):
//  1. Proposal: histogram coarse_key over the view (2048 bins); scanning from
//     the top bin down, tau0 is the first (highest) bin at which the
//     cumulative sample count reaches q0, tau1 likewise for q1 (so
//     tau1 <= tau0). A view with fewer than q1 samples is kNoView.
//     primary_low = coarse_bin_lower_endpoint(tau0), secondary_low likewise.
//  1a. Fine proposal, when fine_proposal_trigger is not 0 and the view
//     holds at least that many samples in tau0's bin and above, for each
//     boundary whose rank the view's numbers reach: its bin's ordered keys [key(low), key(high))
//     are cut into spans of 2^shift keys, shift = max(0, bits(largest
//     offset) - 10) (at most 1024 spans); the boundary's rank within its bin
//     (q - samples in bins above) falls in one span, scanning from the top,
//     and the threshold becomes that span's lowest number. It stays at or
//     below the q-th sample, so lemma 4.1 applies as before.
//  2. Certification: primary_admitted = #{x : x >= primary_low}
//     (= #{x : coarse_key(x) >= tau0} without 1a); >= k -> kPrimary.
//  3. Band: band_admitted = #{x : x >= secondary_low}; >= k -> kBand.
//  4. Otherwise kExact.
// NaN (coarse bin 0) is never admitted: the certification pass compares
// x >= coarse_bin_lower_endpoint(tau), which is false for NaN. So a scan that
// reaches its rank only by counting NaN samples stops at
// kCoarseKeyMinNumber (-inf's bin) instead, admitting every number; a row
// whose top-k needs NaN then underfills and is recovered by the exact route.
// With that, for every x and both bins,
//   x >= coarse_bin_lower_endpoint(tau)  <=>  coarse_key(x) >= tau,
// and a certified admitted set contains the whole top-k (lemma 4.1: coarse_key
// is monotone, so every admitted value >= every excluded value).
SampledDecision decide_sampled_route(const float* row, int64_t len, int k, uint64_t row_id,
                                     const SelectSampledPolicy& policy);

}  // namespace sgtopk::reference
