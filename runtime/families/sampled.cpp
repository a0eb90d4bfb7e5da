// The sampled family (persistent workers; a strided view proposes the
// boundary, one pass certifies it): templates/sgtopk/agent/sampled.cuh.
#include "runtime/families/families.h"

#include "runtime/families/select_common.h"
#include "runtime/sampled_view.h"
#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

void plan_sampled(Plan& plan, const Problem& p, const Policy& policy, const Target& target) {
  const SelectSampledPolicy& sp = policy.sampled;
  set_persistent_geometry(plan, sp.block_threads, sp.workers_per_sm, p, policy, target);
  // No register rows and no floor marks in the recovery.
  plan.config = select_body_config(p, policy, SelectBody{sp.block_threads, sp.loads_in_flight, sp.small_group});
  // Strides, view block and sample ranks are fixed here, once, by the
  // functions the CPU reference uses (runtime/sampled_view.h), never on the GPU.
  const int wide = stride_for_rank(sp.stride_wide, p.k, sp);
  const int narrow = stride_for_rank(sp.stride_narrow, p.k, sp);
  plan.config.integer("kViewLoadsInFlight", sp.view_loads_in_flight)
      .integer("kViewBlock", view_block_for_rank(p.k, sp))
      .integer("kStrideWide", wide)
      .integer("kStrideNarrow", narrow)
      .wide("kWideRowThreshold", sp.wide_row_threshold)
      .integer("kQ0Wide", sample_rank(sp.primary_margin, p.k, wide))
      .integer("kQ1Wide", sample_rank(sp.secondary_margin, p.k, wide))
      .integer("kQ0Narrow", sample_rank(sp.primary_margin, p.k, narrow))
      .integer("kQ1Narrow", sample_rank(sp.secondary_margin, p.k, narrow))
      .integer("kFineTriggerWide", fine_proposal_trigger(p.k, wide, sp))
      .integer("kFineTriggerNarrow", fine_proposal_trigger(p.k, narrow, sp));
  // The row counters, then the slices.
  plan.workspace_bytes = sgtopk::kRowClaimsBytes + frontier_slices_bytes(policy, plan.grid);
}

}  // namespace sgtopk::detail
