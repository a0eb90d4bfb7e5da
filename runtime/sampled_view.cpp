#include "runtime/sampled_view.h"

#include <algorithm>
#include <cmath>

namespace sgtopk::detail {

int stride_for_rank(int stride, int k, const SelectSampledPolicy& policy) {
  if (policy.min_sample_rank <= 0) return stride;
  int s = stride;
  while (s > 1 && sample_ranks(k, s, policy).q0 < policy.min_sample_rank) --s;
  return s;
}

int view_block_for_rank(int k, const SelectSampledPolicy& policy) {
  int block = policy.view_block;
  if (policy.min_view_blocks <= 0) return block;
  const int64_t q0 = std::min(sample_ranks(k, stride_for_rank(policy.stride_wide, k, policy), policy).q0,
                              sample_ranks(k, stride_for_rank(policy.stride_narrow, k, policy), policy).q0);
  while (block > 1 && q0 < int64_t{policy.min_view_blocks} * block) block /= 2;
  return block;
}

int sample_stride(int64_t len, int k, const SelectSampledPolicy& policy) {
  return stride_for_rank(len >= policy.wide_row_threshold ? policy.stride_wide : policy.stride_narrow, k, policy);
}

uint32_t view_seed(uint64_t row_id) { return static_cast<uint32_t>((row_id * 0x9E3779B97F4A7C15ull) >> 32); }

uint32_t view_block_phase(uint32_t seed, int64_t block_index, int stride) {
  if (stride <= 1) return 0;
  uint32_t h = seed ^ (static_cast<uint32_t>(block_index) * 0x85EBCA6Bu);
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  return static_cast<uint32_t>((static_cast<uint64_t>(h) * static_cast<uint32_t>(stride)) >> 32);
}

int64_t view_position(int64_t j, uint32_t seed, int stride, int block) {
  const int64_t m = j / block;
  return m * (static_cast<int64_t>(stride) * block) + static_cast<int64_t>(view_block_phase(seed, m, stride)) * block +
         j % block;
}

int64_t view_size(int64_t len, uint32_t seed, int stride, int block) {
  if (len <= 0 || stride <= 0 || block <= 0) return 0;
  const int64_t span = static_cast<int64_t>(stride) * block;
  const int64_t whole = len / span;  // spans inside the row hold a whole block each
  const int64_t last_start = whole * span + static_cast<int64_t>(view_block_phase(seed, whole, stride)) * block;
  return whole * block + std::clamp<int64_t>(len - last_start, 0, block);
}

int64_t sample_rank(double margin, int k, int stride) {
  if (k <= 0 || stride <= 0) return 0;
  const long double q = static_cast<long double>(margin) * k / stride;
  // A decimal margin is not exact in binary: 1.1 * 1000 / 10 comes out as
  // 110.00000000000000888. Snap quotients that are an integer up to that
  // rounding, so the rank is not bumped by one.
  const long double nearest = std::nearbyint(q);
  if (std::fabs(q - nearest) <= 1e-12L * std::max(1.0L, std::fabs(q))) return static_cast<int64_t>(nearest);
  return static_cast<int64_t>(std::ceil(q));
}

namespace {

// ceil(k/s + z sqrt(k/s)), an integer target not bumped by rounding.
int64_t sigmas_rank(double z, int k, int stride) {
  const long double expected = static_cast<long double>(k) / stride;
  const long double wanted = expected + static_cast<long double>(z) * std::sqrt(expected);
  return static_cast<int64_t>(std::ceil(wanted - 1e-12L * wanted));
}

}  // namespace

SampleRanks margin_ranks(int k, int stride, const SelectSampledPolicy& policy) {
  SampleRanks r;
  r.q0 = sample_rank(policy.primary_margin, k, stride);
  r.q1 = sample_rank(policy.secondary_margin, k, stride);
  if (policy.primary_excess_sigmas > 0.0 && k > 0 && stride > 0) {
    const int64_t cap = sigmas_rank(policy.primary_excess_sigmas, k, stride);
    if (r.q0 > cap) {
      r.q1 -= r.q0 - cap;
      r.q0 = cap;
    }
  }
  return r;
}

SampleRanks sample_ranks(int k, int stride, const SelectSampledPolicy& policy) {
  SampleRanks r = margin_ranks(k, stride, policy);
  if (policy.primary_confidence > 0.0 && k > 0 && stride > 0) {
    const int64_t q0 = sigmas_rank(policy.primary_confidence, k, stride);
    if (q0 > r.q0) {
      r.q1 += q0 - r.q0;
      r.q0 = q0;
    }
  }
  return r;
}

int64_t fine_proposal_trigger(int k, int stride, const SelectSampledPolicy& policy) {
  if (policy.fine_proposal_excess == 0.0) return 0;
  return std::max<int64_t>(1, sample_rank(policy.fine_proposal_excess * policy.primary_margin, k, stride));
}

SelectSampledPolicy split_view_policy(const Policy& policy) {
  SelectSampledPolicy view = policy.sampled;
  view.stride_wide = policy.split.stride_wide;
  view.stride_narrow = policy.split.stride_narrow;
  view.wide_row_threshold = policy.split.wide_row_threshold;
  return view;
}

SelectSampledPolicy cluster_view_policy(const Policy& policy) {
  SelectSampledPolicy view = split_view_policy(policy);
  view.stride_wide = view.stride_narrow;
  return view;
}

}  // namespace sgtopk::detail
