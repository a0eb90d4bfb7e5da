// The cluster family (sm_90 thread-block clusters: one cluster a row, each CTA
// over one segment): templates/sgtopk/agent/cluster.cuh.
#include "runtime/families/families.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/families/select_common.h"
#include "runtime/sampled_view.h"
#include "runtime/target.h"

namespace sgtopk::detail {

bool cluster_fits(const Problem& p, const SelectClusterPolicy& cp, const Target& target) {
  return arch_number(target.arch) >= 90 && p.rows * cp.cluster_size <= int64_t{target.sm_count};
}

void plan_cluster(Plan& plan, const Problem& p, const Policy& policy, const Target& target) {
  const SelectClusterPolicy& cp = policy.cluster;
  if (arch_number(target.arch) < 90)
    invalid_argument("the cluster family needs thread-block clusters, sm_90 or newer; " + target.arch +
                     " has none (the split family serves a few long rows there)");
  if (p.rows * cp.cluster_size > int64_t{0x7fffffff})
    invalid_argument("the cluster family launches select.cluster.cluster_size CTAs a row, at most 2^31 - 1 CTAs; " +
                     std::to_string(p.rows) + " rows are too many for it");
  plan.block = static_cast<unsigned>(cp.block_threads);
  plan.min_blocks_per_sm = 1;
  plan.cluster = static_cast<unsigned>(cp.cluster_size);
  plan.grid = static_cast<unsigned>(p.rows * cp.cluster_size);
  plan.dynamic_smem_bytes = select_smem_bytes(p, policy);
  check_shared_memory(p, policy, target, plan.dynamic_smem_bytes);
  // No floor marks and no work units: each segment's passes read it whole,
  // chunk by chunk; the small-group finish is a one-CTA step. The view is
  // the split family's, at its narrow stride for every row (cluster_view_policy).
  plan.config = select_body_config(p, policy, SelectBody{cp.block_threads, cp.loads_in_flight, 0});
  plan.config.flag("kWorkUnits", false)
      .integer("kClusterSize", cp.cluster_size)
      .integer("kSegmentAlign", 64);
  set_view_config(plan.config, p, cluster_view_policy(policy));
  plan.derived.push_back(describe_view(p.k, cluster_view_policy(policy)));
  if (std::string f = describe_frontier(p.k, policy); !f.empty()) plan.derived.push_back(f);
  plan.workspace_bytes = frontier_slices_bytes(policy, plan.grid);
}

}  // namespace sgtopk::detail
