// The split family (KV-split: a row's segments on several CTAs, the last to
// arrive finishes the row): templates/sgtopk/agent/split.cuh.
#include "runtime/families/families.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/families/select_common.h"
#include "runtime/sampled_view.h"
#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

// The largest listed count whose grid (rows x count) stays within
// ctas_per_sm x SMs and whose segments hold min_segment_width scores of the
// widest row; 1 when none does (the family then runs the sampled route, one
// CTA per row).
int split_segments(const Problem& p, const SelectSplitPolicy& sp, int sm_count) {
  const int64_t budget = int64_t{sm_count} * sp.ctas_per_sm;
  int segments = 1;
  for (int count : sp.split_counts)
    if (p.rows * count <= budget && p.width / count >= sp.min_segment_width) segments = std::max(segments, count);
  return segments;
}

namespace {

// The policy the split's body is planned under: its segments' shared
// frontier at least segment_capacity entries.
Policy split_body_policy(const Policy& policy) {
  Policy body = policy;
  body.direct.frontier_shared_capacity = std::max(body.direct.frontier_shared_capacity, policy.split.segment_capacity);
  return body;
}

}  // namespace

void plan_split(Plan& plan, const Problem& p, const Policy& split_policy, const Target& target) {
  const Policy policy = split_body_policy(split_policy);
  const SelectSplitPolicy& sp = policy.split;
  const int segments = split_segments(p, sp, target.sm_count);
  plan.block = static_cast<unsigned>(sp.block_threads);
  plan.min_blocks_per_sm = static_cast<unsigned>(std::max(1, std::min(sp.ctas_per_sm, 2048 / sp.block_threads)));
  if (p.rows * segments > int64_t{0x7fffffff})
    invalid_argument("the split family launches one CTA per row and segment, at most 2^31 - 1 CTAs; " +
                     std::to_string(p.rows) + " rows are too many for it (the sampled family takes them)");
  plan.grid = static_cast<unsigned>(p.rows * segments);
  plan.dynamic_smem_bytes = sgtopk::split_shared_bytes(select_smem_bytes(p, policy), sp.block_threads, sp.finisher_items);
  const int entries = frontier_shared_entries(p.k, policy);
  const bool raised = entries != frontier_shared_entries(p.k, split_policy);
  const unsigned limit = max_dynamic_shared_bytes(target.arch);
  if (raised && limit != 0u && plan.dynamic_smem_bytes > limit)
    invalid_argument("the plan needs " + std::to_string(plan.dynamic_smem_bytes) + " bytes of shared memory per block but " +
                     target.arch + " allows at most " + std::to_string(limit) +
                     ": lower select.split.segment_capacity (now " + std::to_string(sp.segment_capacity) + ")");
  check_shared_memory(p, policy, target, plan.dynamic_smem_bytes);
  plan.config = select_body_config(p, policy, SelectBody{sp.block_threads, sp.loads_in_flight, policy.sampled.small_group});
  set_view_config(plan.config, p, split_view_policy(policy));
  plan.derived.push_back(describe_view(p.k, split_view_policy(policy)));
  if (raised)
    plan.derived.push_back("segments keep up to " + std::to_string(entries) +
                           " candidates in shared memory [select.split.segment_capacity " +
                           std::to_string(sp.segment_capacity) + "]");
  else if (std::string f = describe_frontier(p.k, policy); !f.empty())
    plan.derived.push_back(f);
  const bool prefetches = has_bulk_prefetch(target);
  describe_prefetches(plan, target, sp.prefetch_before_view_kb != 0 || sp.prefetch_after_view_kb != 0 || sp.prefetch_ahead_chunks != 0,
                      "segments asked of L2: " + std::to_string(sp.prefetch_before_view_kb) + " KB before the proposal, " +
                          std::to_string(sp.prefetch_after_view_kb) + " KB more once the view is read, " +
                          std::to_string(sp.prefetch_ahead_chunks) + " chunk(s) ahead of the pass",
                      "select.split.prefetch_before_view_kb, prefetch_after_view_kb, prefetch_ahead_chunks");
  plan.config.integer("kSegments", segments)
      .wide("kMinSegmentWidth", sp.min_segment_width)
      .integer("kCandidateCapacity", sp.candidate_capacity)
      .integer("kFinisherItems", sp.finisher_items)
      .integer("kPrefetchBeforeViewKb", prefetches ? sp.prefetch_before_view_kb : 0)
      .integer("kPrefetchAfterViewKb", prefetches ? sp.prefetch_after_view_kb : 0)
      .integer("kPrefetchAheadChunks", prefetches ? sp.prefetch_ahead_chunks : 0);
  // One record per row: its counters, its candidates, its finisher's slice.
  plan.workspace_bytes = static_cast<uint64_t>(p.rows) *
                         sgtopk::split_row_bytes(sp.candidate_capacity, policy.direct.frontier_global_capacity);
}

}  // namespace sgtopk::detail
