#include "reference/sampled_route.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "reference/select.h"

namespace sgtopk::reference {

namespace {

// The highest bin at which the cumulative count from the top reaches `rank`
// (rank >= 1, and the histogram holds at least `rank` samples). Bin 0 is NaN
// only and never admitted (see decide_sampled_route), so the scan stops at
// the lowest bin that holds a number.
uint32_t proposal_bin(const std::array<int64_t, kCoarseBins>& histogram, int64_t rank) {
  int64_t cumulative = 0;
  for (uint32_t bin = kCoarseBins - 1; bin > kCoarseKeyMinNumber; --bin) {
    cumulative += histogram[bin];
    if (cumulative >= rank) return bin;
  }
  return kCoarseKeyMinNumber;
}

int64_t count_at_or_above(const float* row, int64_t len, float low) {
  int64_t count = 0;
  for (int64_t i = 0; i < len; ++i) count += row[i] >= low ? 1 : 0;  // never NaN
  return count;
}

// A coarse bin cut into at most 1024 equal spans of ordered keys, as
// keys.cuh's SubBins: `low` is the bin's lowest number, `high` the lowest
// number above it (NaN when none).
struct SubBins {
  uint32_t low_key;
  int shift;

  static SubBins of(float low, float high) {
    const uint32_t low_key = ordered_key(low);
    const uint32_t end = std::isnan(high) ? ordered_key(std::numeric_limits<float>::infinity()) + 1u : ordered_key(high);
    const uint32_t largest = end - low_key - 1u;
    const int bits = 32 - std::countl_zero(largest);
    return SubBins{low_key, std::max(0, bits - 10)};
  }
  uint32_t digit(float x) const { return (ordered_key(x) - low_key) >> shift; }
  float endpoint(uint32_t d) const { return float_from_ordered_key(low_key + (d << shift)); }
};

// Step 1a of decide_sampled_route: the lowest number of the span of `bin`
// holding the `rank_in_bin`-th largest of the view's samples in that bin
// (the view of `decision`, read again from the row, as the kernel does).
float fine_endpoint(const float* row, const SampledDecision& decision, uint32_t bin, int64_t rank_in_bin) {
  const SubBins sub = SubBins::of(coarse_bin_lower_endpoint(bin), coarse_bin_lower_endpoint(bin + 1));
  std::array<int64_t, 1024> digits{};
  for (int64_t j = 0; j < decision.view_size; ++j) {
    const float x = row[view_position(j, decision.seed, decision.stride, decision.block)];
    if (coarse_key(x) == bin) ++digits[sub.digit(x)];
  }
  int64_t cumulative = 0;
  for (uint32_t d = 1024; d-- > 0;) {
    cumulative += digits[d];
    if (cumulative >= rank_in_bin) return sub.endpoint(d);
  }
  return coarse_bin_lower_endpoint(bin);  // not reached: the bin holds the rank
}

}  // namespace

const char* route_name(SampledDecision::Route route) {
  switch (route) {
    case SampledDecision::kShort: return "short";
    case SampledDecision::kNoView: return "no_view";
    case SampledDecision::kPrimary: return "primary";
    case SampledDecision::kBand: return "band";
    case SampledDecision::kExact: return "exact";
  }
  return "unknown";
}

SampledDecision decide_sampled_route(const float* row, int64_t len, int k, uint64_t row_id,
                                     const SelectSampledPolicy& policy) {
  SampledDecision d;
  d.stride = sample_stride(len, k, policy);
  d.block = view_block_for_rank(k, policy);
  d.seed = view_seed(row_id);
  const detail::SampleRanks ranks = sample_ranks(k, d.stride, policy);
  d.q0 = ranks.q0;
  d.q1 = ranks.q1;
  if (len <= k) {
    d.route = SampledDecision::kShort;
    return d;
  }
  d.view_size = view_size(len, d.seed, d.stride, d.block);
  if (d.view_size < std::max(d.q0, d.q1)) {
    d.route = SampledDecision::kNoView;
    return d;
  }

  // Phase 1, proposal: one histogram over the view, one scan for both ranks.
  std::array<int64_t, kCoarseBins> histogram{};
  for (int64_t j = 0; j < d.view_size; ++j) ++histogram[coarse_key(row[view_position(j, d.seed, d.stride, d.block)])];
  d.primary_bin = proposal_bin(histogram, d.q0);
  d.secondary_bin = proposal_bin(histogram, d.q1);
  d.primary_low = coarse_bin_lower_endpoint(d.primary_bin);
  d.secondary_low = coarse_bin_lower_endpoint(d.secondary_bin);
  // Samples in each bin and above; NaN's (bin 0) never reach a rank.
  std::array<int64_t, kCoarseBins + 1> at_or_above{};
  for (uint32_t bin = kCoarseBins; bin-- > kCoarseKeyMinNumber;) at_or_above[bin] = at_or_above[bin + 1] + histogram[bin];
  const int64_t numbers = at_or_above[kCoarseKeyMinNumber];
  const int64_t trigger = fine_proposal_trigger(k, d.stride, policy);
  if (trigger != 0 && numbers >= d.q0 && at_or_above[d.primary_bin] >= trigger) {
    d.primary_low = fine_endpoint(row, d, d.primary_bin, d.q0 - at_or_above[d.primary_bin + 1]);
    if (numbers >= d.q1)
      d.secondary_low = fine_endpoint(row, d, d.secondary_bin, d.q1 - at_or_above[d.secondary_bin + 1]);
  }

  // Phase 2, certification: a full pass admitting every x at or above primary_low.
  d.primary_admitted = count_at_or_above(row, len, d.primary_low);
  if (d.primary_admitted >= k) {
    d.route = SampledDecision::kPrimary;
    return d;
  }
  // Phase 3, band (underfill only): add [tau1, tau0); the count is the whole candidate set.
  d.band_admitted = count_at_or_above(row, len, d.secondary_low);
  d.route = d.band_admitted >= k ? SampledDecision::kBand : SampledDecision::kExact;
  return d;
}

}  // namespace sgtopk::reference
