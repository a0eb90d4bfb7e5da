// The filter_row family (one CTA a row; every decision by digit histograms
// over the whole row, the mask written in a last pass):
// templates/sgtopk/agent/filter_row.cuh.
#include "runtime/families/families.h"

#include <algorithm>

#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

namespace {

// The CTAs of `threads` an SM's 2048 threads hold at once.
int ctas_per_sm(int threads) { return std::max(1, 2048 / threads); }

}  // namespace

void plan_filter_row(Plan& plan, const Problem& p, const Policy& policy, const Target& target) {
  const int threads = policy.filter.block_threads;
  plan.block = static_cast<unsigned>(threads);
  // No occupancy hint: one CTA of 1024 already fills half an SM, and a cap on
  // registers would only risk spills.
  plan.min_blocks_per_sm = 1;
  // A CTA takes every grid-th row: the CTAs an SM holds at once (threads
  // permitting) on every SM, so rows past live_rows cost no empty CTAs.
  plan.grid = static_cast<unsigned>(
      std::min<int64_t>(p.rows, int64_t{target.sm_count} * ctas_per_sm(threads)));
  // Under 25 KB: within every architecture's default 48 KB.
  plan.dynamic_smem_bytes = sgtopk::filter_row_shared_bytes();
  plan.config = KernelConfig().integer("kThreads", threads);
  plan.workspace_bytes = 0;
}

}  // namespace sgtopk::detail
