// The short-row family (rows a CTA holds in registers: one CTA a row, radix
// rounds in shared memory): templates/sgtopk/agent/short_row.cuh.
#include "runtime/families/families.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/families/select_common.h"
#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

ShortRowShape short_row_shape(const Problem& p, const SelectShortRowPolicy& sr, int sm_count) {
  const bool few_rows = p.rows <= sm_count;
  const int items_wanted = few_rows ? sr.few_rows_items_per_thread : sr.items_per_thread;
  const int max_threads = few_rows ? 1024 : sr.max_block_threads;
  int threads = sr.min_block_threads;
  while (threads < max_threads && int64_t{threads} * items_wanted < p.width) threads *= 2;
  // Whole runs of four scores a thread (one float4 each, agent/short_row.cuh).
  const int64_t items = ((std::max<int64_t>(1, (p.width + threads - 1) / threads) + 3) / 4) * 4;
  return ShortRowShape{threads, items <= kShortRowMaxItems ? static_cast<int>(items) : 0, few_rows};
}

void plan_short_row(Plan& plan, const Problem& p, const Policy& policy, const Target& target) {
  const ShortRowShape shape = short_row_shape(p, policy.short_row, target.sm_count);
  if (shape.items == 0)
    invalid_argument("rows of width " + std::to_string(p.width) + " are too wide for the short_row family (at most " +
                     std::to_string(int64_t{policy.short_row.max_block_threads} * kShortRowMaxItems) + " scores: " +
                     "select.short_row.max_block_threads " + std::to_string(policy.short_row.max_block_threads) +
                     " x " + std::to_string(kShortRowMaxItems) + "; 1024 threads hold 32768)");
  if (p.rows > int64_t{0x7fffffff})
    invalid_argument("the short_row family launches one CTA per row, at most 2^31 - 1; " + std::to_string(p.rows) +
                     " rows are too many for it");
  plan.block = static_cast<unsigned>(shape.threads);
  // At most a row per SM: the scores stay in registers, one CTA an SM (a
  // row's latency sets the time). Else the policy's occupancy, which caps
  // the registers (32 a thread at 2048 threads an SM).
  const bool scores_in_registers = shape.few_rows || policy.short_row.scores_in_registers;
  plan.min_blocks_per_sm =
      shape.few_rows ? 1u : static_cast<unsigned>(std::max(1, policy.short_row.threads_per_sm / shape.threads));
  plan.grid = static_cast<unsigned>(std::max<int64_t>(1, p.rows));
  plan.dynamic_smem_bytes = sgtopk::short_row_shared_bytes(shape.threads, shape.items, p.sorted, sort_slots(p));
  check_shared_memory(p, policy, target, plan.dynamic_smem_bytes);
  plan.config = select_body_config(p, policy, SelectBody{shape.threads, 1, 0, shape.items});
  plan.config.flag("kScoresInRegisters", scores_in_registers);
  plan.workspace_bytes = 0;
}

}  // namespace sgtopk::detail
