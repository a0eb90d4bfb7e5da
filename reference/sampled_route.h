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
#include "runtime/sampled_view.h"

namespace sgtopk::reference {

// The view arithmetic is the planner's (runtime/sampled_view.h): the
// reference decides routes with the very functions that specialize the kernel.
using detail::fine_proposal_trigger;
using detail::sample_rank;
using detail::sample_ranks;
using detail::sample_stride;
using detail::SelectSampledPolicy;
using detail::stride_for_rank;
using detail::view_block_for_rank;
using detail::view_block_phase;
using detail::view_position;
using detail::view_seed;
using detail::view_size;

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
  uint32_t seed = 0;           // view_seed(row_id): the view's block phases
  int64_t q0 = 0, q1 = 0;      // sample ranks (sample_ranks: the margins, the confidence)
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
