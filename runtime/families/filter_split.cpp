// The filter_split family (a few rows: each row's vocabulary in segments on
// several CTAs, the last to arrive decides the row; docs/filter-design.md):
// templates/sgtopk/agent/filter_split.cuh.
#include "runtime/families/families.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/families/select_common.h"
#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

// The CTAs an SM holds: filter.split.ctas_per_sm within what its threads,
// registers (64 a thread) and shared memory allow; one with the candidate
// or sample output compiled in (after the segment pass their code needs
// more than 64 registers a thread: ptxas spilled at two CTAs of 512).
int filter_split_ctas_per_sm(const Problem& p, const FilterSplitPolicy& policy, const std::string& arch) {
  if (p.filter_candidates || p.filter_sample) return 1;
  return std::min(policy.ctas_per_sm, filter_ctas_per_sm(policy.block_threads, sgtopk::filter_row_shared_bytes(sgtopk::kFilterCandidates), arch));
}

// As many segments a row as the grid (the CTAs an SM holds) and the
// vocabulary (min_segment_width a segment) allow; 1 below min_segments (or
// with 0).
int filter_split_segments(const Problem& p, const FilterSplitPolicy& policy, const Target& target) {
  if (policy.min_segments == 0) return 1;
  const int64_t by_grid = int64_t{target.sm_count} * filter_split_ctas_per_sm(p, policy, target.arch) / p.rows;
  const int64_t by_width = p.width / policy.min_segment_width;
  const int64_t segments = std::min(by_grid, by_width);
  return segments >= std::max(2, policy.min_segments) ? static_cast<int>(segments) : 1;
}

void plan_filter_split(Plan& plan, const Problem& p, const Policy& policy, const Target& target) {
  const FilterSplitPolicy& fs = policy.filter_split;
  const int segments = filter_split_segments(p, fs, target);
  if (p.rows * segments > int64_t{0x7fffffff})
    invalid_argument("the filter_split family launches one CTA per row and segment, at most 2^31 - 1 CTAs; " +
                     std::to_string(p.rows) + " rows are too many for it (the filter_row family takes them)");
  plan.block = static_cast<unsigned>(fs.block_threads);
  // filter_row's shared memory (its CTA decides a row as filter_row does).
  plan.dynamic_smem_bytes = sgtopk::filter_row_shared_bytes(sgtopk::kFilterCandidates);
  plan.min_blocks_per_sm = static_cast<unsigned>(filter_split_ctas_per_sm(p, fs, target.arch));
  plan.grid_constant_params = true;  // finish_window takes FilterParams by reference, out of line
  plan.grid = static_cast<unsigned>(p.rows * segments);
  const bool prefetches = has_bulk_prefetch(target);
  describe_prefetches(plan, target, fs.prefetch_before_sample_kb != 0 || fs.prefetch_ahead_steps != 0,
                      "segments asked of L2: " + std::to_string(fs.prefetch_before_sample_kb) + " KB before the sample, " +
                          std::to_string(fs.prefetch_ahead_steps) + " step(s) ahead of each pass",
                      "filter.split.prefetch_before_sample_kb, prefetch_ahead_steps");
  plan.config = filter_config(plan, p, policy.filter, fs.block_threads, fs.loads_in_flight,
                              prefetches ? fs.prefetch_ahead_steps : 0)
                    .integer("kSegments", segments)
                    .integer("kPrefetchBeforeSampleKb", prefetches ? fs.prefetch_before_sample_kb : 0);
  // One record a row: the segments' arrival, count and largest key, then the candidates.
  plan.workspace_bytes = static_cast<uint64_t>(p.rows) * sgtopk::filter_split_row_bytes();
  // Mask-only kernels weigh top-p-alone rows in a second launch, once the
  // first has the row's largest key (filter_split.cuh, "Top-p alone"); a
  // call whose scalars rule such rows out makes one (needed_launches).
  if (segments > 1 && !p.filter_candidates && !p.filter_sample) plan.launches = 2;
}

}  // namespace sgtopk::detail
