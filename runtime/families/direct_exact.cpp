// The direct-exact family (the paper's row-local exact mapping): one CTA owns
// a row; the agent is templates/sgtopk/agent/direct_exact.cuh.
#include "runtime/families/families.h"

#include <algorithm>

#include "runtime/families/select_common.h"
#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

void plan_direct_exact(Plan& plan, const Problem& p, const Policy& given, const Target& target) {
  // The shared frontier keeps frontier_shared_capacity here: this family's
  // block also holds its floor marks, which grow with the width, and a
  // frontier grown with K would leave room for one 512-thread CTA an SM
  // instead of two (K = 4096 at 1M scores: 131 KB a block).
  Policy policy = given;
  policy.direct.frontier_shared_per_k = 0.0;
  const SelectDirectPolicy& d = policy.direct;
  // Short rows stay in registers between the passes (the short-row
  // specialization), in CTAs of their own size, as many threads per SM.
  // Streamed rows run block_threads x workers_per_sm per SM; a launch with
  // no more rows than SMs gives each row its SM's threads in one CTA (up to
  // 1024), since no second row would share the SM.
  const int threads_per_sm = d.block_threads * d.workers_per_sm;
  const bool in_registers = p.width <= int64_t{d.register_block_threads} * d.items_per_thread;
  const bool row_per_sm = d.row_per_sm && !in_registers && d.workers_per_sm > 1 && p.rows <= target.sm_count;
  const int threads = in_registers ? d.register_block_threads
                      : row_per_sm ? std::min(1024, threads_per_sm)
                                   : d.block_threads;
  const int workers_per_sm = in_registers ? std::max(1, threads_per_sm / d.register_block_threads)
                             : row_per_sm ? 1
                                          : d.workers_per_sm;
  const int register_items = in_registers ? static_cast<int>((p.width + threads - 1) / threads) : 0;
  // Streamed rows with a 16-byte body get floor marks where they fit beside
  // the rest of the block's shared memory (a plan never fails for them).
  const unsigned limit = max_dynamic_shared_bytes(target.arch);
  const int64_t chunks = sgtopk::body_chunks(p.width, threads, d.loads_in_flight);
  const auto marks_words = [&](int words, int bin_chunks) {
    return sgtopk::floor_marks_shared_words(words, threads, bin_chunks, d.loads_in_flight);
  };
  int mark_words = 0;
  if (d.floor_marks && register_items == 0 && d.vector_bytes == 16) {
    mark_words = static_cast<int>(sgtopk::floor_mark_words(chunks, d.loads_in_flight));
    if (limit == 0u || select_smem_bytes(p, policy, marks_words(mark_words, 0)) > limit) mark_words = 0;
  }
  // With marks, the bins of the first chunks read (no more chunks than the
  // widest row has), where they fit beside the rest (else plain marks).
  int bin_chunks = 0;
  if (mark_words > 0 && d.marked_bin_chunks > 0) {
    bin_chunks = static_cast<int>(std::min<int64_t>(d.marked_bin_chunks, chunks));
    if (select_smem_bytes(p, policy, marks_words(mark_words, bin_chunks)) > limit) bin_chunks = 0;
  }
  set_persistent_geometry(plan, threads, workers_per_sm, p, policy, target, marks_words(mark_words, bin_chunks));
  plan.config = select_body_config(
      p, policy, SelectBody{threads, d.loads_in_flight, d.small_group, register_items, mark_words, bin_chunks});
  plan.workspace_bytes = frontier_slices_bytes(policy, plan.grid);
}

}  // namespace sgtopk::detail
