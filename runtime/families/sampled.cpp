// The sampled family (persistent workers; a strided view proposes the
// boundary, one pass certifies it): templates/sgtopk/agent/sampled.cuh.
#include "runtime/families/families.h"

#include "runtime/families/select_common.h"
#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

void plan_sampled(Plan& plan, const Problem& p, const Policy& policy, const Target& target) {
  const SelectSampledPolicy& sp = policy.sampled;
  set_persistent_geometry(plan, sp.block_threads, sp.workers_per_sm, p, policy, target);
  // No register rows and no floor marks in the recovery.
  plan.config = select_body_config(p, policy, SelectBody{sp.block_threads, sp.loads_in_flight, sp.small_group});
  set_view_config(plan.config, p, sp);
  plan.derived.push_back(describe_view(p.k, sp));
  if (std::string f = describe_frontier(p.k, policy); !f.empty()) plan.derived.push_back(f);
  // The row counters, then the slices.
  plan.workspace_bytes = sgtopk::kRowClaimsBytes + frontier_slices_bytes(policy, plan.grid);
}

}  // namespace sgtopk::detail
