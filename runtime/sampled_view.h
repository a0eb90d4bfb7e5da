// The sampled family's view arithmetic (ALGORITHM.md, "Phases of the sampled
// route"): strides, view blocks, phases and sample ranks. The planner fixes
// them once per plan and hands them to the kernel as constants; the CPU
// reference (reference/sampled_route.h) decides routes with the same functions.
#pragma once

#include <cstdint>

#include "runtime/policy.h"

namespace sgtopk::detail {

// The stride a plan uses in place of `stride` for rank k: unchanged unless
// policy.min_sample_rank > 0, then the largest s <= stride whose primary rank
// (sample_ranks) reaches min_sample_rank (at least 1). Small K
// would otherwise propose from a handful of samples (K = 256 at s = 128:
// q0 = 3) and recover often.
int stride_for_rank(int stride, int k, const SelectSampledPolicy& policy);

// The primary and secondary sample ranks a plan proposes at for rank k and
// view stride s: q = sample_rank(margin, k, s) (margin_ranks: the primary
// lowered to ceil(k/s + z_max * sqrt(k/s)) when policy.primary_excess_sigmas
// = z_max > 0 asks for less, the secondary by as much), then the primary
// raised to ceil(k/s + z * sqrt(k/s)) when policy.primary_confidence = z > 0
// asks for more, and the secondary raised by as much (so q1 >= q0 stays). The count
// of scores at or above the q0-th sample is about s x Gamma(q0): k/s + z
// sqrt(k/s) samples leave about z standard deviations above K, where a
// fixed margin leaves 1.4 at K = 256 (s = 32) and 4 at K = 2048.
struct SampleRanks {
  int64_t q0 = 0, q1 = 0;
};
SampleRanks margin_ranks(int k, int stride, const SelectSampledPolicy& policy);
SampleRanks sample_ranks(int k, int stride, const SelectSampledPolicy& policy);

// The view block b a plan uses for rank k: policy.view_block, halved while
// b > 1 and the primary rank q0 (the smaller of the two stride classes')
// spans fewer than policy.min_view_blocks blocks (0: never). Scores in one
// block are neighbours, hence correlated on real rows: what certifies a
// proposal is the number of blocks above it, not of samples.
int view_block_for_rank(int k, const SelectSampledPolicy& policy);

// View stride s of a row of length `len` for rank k: stride_wide when
// len >= wide_row_threshold, else stride_narrow; then stride_for_rank.
int sample_stride(int64_t len, int k, const SelectSampledPolicy& policy);

// The view with blocks of b consecutive scores (view_block_for_rank; the
// paper's view is b = 1): one block in each span of s * b positions, so the
// density stays 1/s and the sample ranks do not change, but a GPU gathers b
// neighbours at once (b = 8: one 32-byte sector instead of eight). Block m
// sits at m * s * b + a_{r,m} * b, its phase a_{r,m} in [0, s) hashed from
// the row's seed and m:
//   seed_r  = (uint32_t)((row_id * 0x9E3779B97F4A7C15) mod 2^64 >> 32)
//   h       = seed_r ^ (uint32_t)m * 0x85EBCA6B; h ^= h >> 16;
//             h *= 0x7FEB352D; h ^= h >> 15
//   a_{r,m} = (h * s) >> 32
// Each block its own phase: scores periodic in the span (a period dividing
// s * b) cannot hide from a row's view, as they could from one phase per row
// (docs/decisions/2026-12-01-sampled-view-phase-per-block.md). The GPU
// kernel uses the same formulas with the same row id (the row's index in the
// launch). View element j is position m * s * b + a_{r,m} * b + j % b,
// m = j / b; the elements below len are j < view_size.
uint32_t view_seed(uint64_t row_id);
uint32_t view_block_phase(uint32_t seed, int64_t block_index, int stride);
int64_t view_position(int64_t j, uint32_t seed, int stride, int block);
int64_t view_size(int64_t len, uint32_t seed, int stride, int block);

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

// The view policy of the split family: [select.sampled] with its strides
// and their threshold replaced by [select.split]'s (every CTA of a row reads
// the whole view, so a split row affords a sparser one). Its routes are the sampled
// family's under this policy.
SelectSampledPolicy split_view_policy(const Policy& policy);
// The cluster family's: the split's, with one stride (stride_narrow) for
// every row; a second stride spills the cluster kernel's 64 registers.
SelectSampledPolicy cluster_view_policy(const Policy& policy);

}  // namespace sgtopk::detail
