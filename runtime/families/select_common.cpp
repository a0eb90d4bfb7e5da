#include "runtime/families/select_common.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "runtime/error.h"
#include "runtime/sampled_view.h"
#include "templates/sgtopk/abi.h"

namespace sgtopk::detail {

namespace {

int ceil_log2(int64_t n) {
  int bits = 0;
  while ((int64_t{1} << bits) < n) ++bits;
  return bits;
}

// __launch_bounds__ hint: the workers that fit an SM's 2048 threads.
unsigned occupancy_hint(int threads, int workers_per_sm) {
  return static_cast<unsigned>(std::max(1, std::min(workers_per_sm, 2048 / threads)));
}

// Raises per chunk as the kernel spaces them (every warps/n-th claim, the
// last always): a power of two, so it divides the block's warps, and at most
// their count.
int raises_per_chunk(int asked, int threads) {
  int n = 1;
  while (n * 2 <= asked && n * 2 <= threads / 32) n *= 2;
  return n;
}

}  // namespace

int64_t next_pow2(int64_t n) { return int64_t{1} << ceil_log2(std::max<int64_t>(n, 1)); }

int sort_slots(const Problem& p) { return p.sorted ? static_cast<int>(next_pow2(p.k)) : 1; }

int frontier_shared_entries(int k, const Policy& policy) {
  const SelectDirectPolicy& d = policy.direct;
  const int64_t per_k = static_cast<int64_t>(std::ceil(d.frontier_shared_per_k * static_cast<double>(k) / 256.0)) * 256;
  const int64_t raised = std::min<int64_t>(per_k, d.frontier_shared_limit);
  return static_cast<int>(std::max<int64_t>(d.frontier_shared_capacity, raised));
}

// A plan whose block cannot get its shared memory on the target is the
// caller's error (a policy or a K too large for that GPU): say so at compile
// time, not as a failed cuFuncSetAttribute at load.
void check_shared_memory(const Problem& p, const Policy& policy, const Target& target, unsigned bytes) {
  const unsigned limit = max_dynamic_shared_bytes(target.arch);
  if (limit == 0u || bytes <= limit) return;
  const int frontier = frontier_shared_entries(p.k, policy);
  const bool sort_buffer = sgtopk::sort_buffer_bytes(p.sorted, sort_slots(p)) > sgtopk::frontier_shared_bytes(frontier);
  invalid_argument("the plan needs " + std::to_string(bytes) + " bytes of shared memory per block but " + target.arch +
                   " allows at most " + std::to_string(limit) + ": " +
                   (sort_buffer ? "the sorted option at K=" + std::to_string(p.k) +
                                      " needs a sort buffer of next_pow2(K) x 8 bytes (use a smaller K, or sort outside)"
                                : frontier > policy.direct.frontier_shared_capacity
                                      ? "lower select.direct.frontier_shared_limit or frontier_shared_per_k (the frontier "
                                        "holds " + std::to_string(frontier) + " entries at K=" + std::to_string(p.k) + ")"
                                      : "lower select.direct.frontier_shared_capacity (now " +
                                            std::to_string(policy.direct.frontier_shared_capacity) + ")"));
}

std::string describe_view(int k, const SelectSampledPolicy& sp) {
  std::ostringstream s;
  const int wide = stride_for_rank(sp.stride_wide, k, sp), narrow = stride_for_rank(sp.stride_narrow, k, sp);
  s << "view stride " << wide;
  if (narrow != wide) s << " (rows narrower than " << sp.wide_row_threshold << ": " << narrow << ")";
  if (wide != sp.stride_wide || narrow != sp.stride_narrow) s << " [select.sampled.min_sample_rank " << sp.min_sample_rank << "]";
  const int block = view_block_for_rank(k, sp);
  s << ", blocks of " << block;
  if (block != sp.view_block) s << " [select.sampled.view_block " << sp.view_block << " halved for min_view_blocks " << sp.min_view_blocks << "]";
  const SampleRanks ranks = sample_ranks(k, wide, sp);
  s << ", sample ranks q0 " << ranks.q0 << " / q1 " << ranks.q1;
  const int64_t margin_q0 = sample_rank(sp.primary_margin, k, wide), margin_q1 = sample_rank(sp.secondary_margin, k, wide);
  const SampleRanks capped = margin_ranks(k, wide, sp);
  if (capped.q0 != margin_q0)
    s << " [select.sampled.primary_excess_sigmas " << sp.primary_excess_sigmas << " lowered the margins' " << margin_q0 << " / "
      << margin_q1 << "]";
  if (ranks.q0 != capped.q0)
    s << " [select.sampled.primary_confidence " << sp.primary_confidence << " raised the margins' " << capped.q0 << " / " << capped.q1 << "]";
  if (narrow != wide) {
    const SampleRanks narrow_ranks = sample_ranks(k, narrow, sp);
    s << " (narrower rows: q0 " << narrow_ranks.q0 << " / q1 " << narrow_ranks.q1 << ")";
  }
  return s.str();
}

std::string describe_frontier(int k, const Policy& policy) {
  const int entries = frontier_shared_entries(k, policy);
  if (entries == policy.direct.frontier_shared_capacity) return "";
  std::ostringstream s;
  s << "frontier " << entries << " shared entries [select.direct.frontier_shared_per_k " << policy.direct.frontier_shared_per_k
    << " x K, up to frontier_shared_limit " << policy.direct.frontier_shared_limit << "; frontier_shared_capacity "
    << policy.direct.frontier_shared_capacity << "]";
  return s.str();
}

unsigned select_smem_bytes(const Problem& p, const Policy& policy, int floor_marks_words) {
  return sgtopk::select_shared_bytes(frontier_shared_entries(p.k, policy), p.sorted, sort_slots(p), floor_marks_words);
}

unsigned max_dynamic_shared_bytes(const std::string& arch) {
  // CUDA programming guide, "Technical Specifications".
  switch (arch_number(arch)) {
    case 70: case 72: return 96u * 1024u;
    case 75: return 64u * 1024u;
    case 80: case 87: return 163u * 1024u;
    case 86: case 89: case 120: case 121: return 99u * 1024u;
    case 90: case 100: case 101: case 103: case 110: return 227u * 1024u;
    default: return 0u;
  }
}

KernelConfig select_body_config(const Problem& p, const Policy& policy, const SelectBody& body) {
  const SelectDirectPolicy& d = policy.direct;
  const int threads = body.threads, loads = body.loads_in_flight, mark_words = body.floor_mark_words;
  const int frontier = frontier_shared_entries(p.k, policy);
  KernelConfig c;
  c.integer("kK", p.k)
      .integer("kThreads", threads)
      .wide("kWidth", p.width)
      .wide("kPitch", p.pitch)
      .wide("kOutPitch", p.out_pitch)
      .flag("kValues", p.values)
      .flag("kSorted", p.sorted)
      .flag("kStarts", p.starts)
      .flag("kRouteStats", p.route_stats)
      .integer("kIndexTransform", static_cast<int>(p.index_transform))
      .integer("kPageSize", p.page_size)
      .wide("kPageTablePitch", p.page_table_pitch)
      .integer("kRegisterItems", body.register_items)
      .integer("kLoadsInFlight", loads)
      .flag("kPrefetchNextChunk", d.prefetch_next_chunk)
      .integer("kPrefetchL2Chunks", d.prefetch_l2_chunks)
      .flag("kAggregateHistogram", d.aggregate_histogram)
      .flag("kEndpointClassification", d.endpoint_classification)
      .flag("kHistogramBackward", d.histogram_backward)
      .flag("kVectorLoads", d.vector_bytes == 16)
      .integer("kIndexBits", std::max(1, ceil_log2(p.width)))
      .integer("kFrontierSharedCapacity", frontier)
      .integer("kFrontierGlobalCapacity", d.frontier_global_capacity)
      .integer("kSortSlots", sort_slots(p))
      .integer("kSmallGroup",
               std::min({body.small_group, threads, frontier + d.frontier_global_capacity}))
      .integer("kFloorMarkWords", mark_words)
      .integer("kSparseVectors", mark_words > 0 ? d.sparse_vectors : 0)
      .flag("kGatherMarked", mark_words > 0 && d.gather_marked)
      .integer("kMarkedBinChunks", body.marked_bin_chunks)
      .integer("kGatherBatch", d.gather_batch > 0 ? d.gather_batch : loads)
      .flag("kRaiseAtClaim", d.raise_at_claim)
      .integer("kRaisesPerChunk", raises_per_chunk(d.raises_per_chunk, threads))
      .flag("kWorkUnits", d.work_units && d.vector_bytes == 16 && !d.prefetch_next_chunk && d.prefetch_l2_chunks == 0);
  return c;
}

void set_persistent_geometry(Plan& plan, int threads, int workers_per_sm, const Problem& p, const Policy& policy,
                             const Target& target, int floor_marks_words) {
  plan.block = static_cast<unsigned>(threads);
  plan.min_blocks_per_sm = occupancy_hint(threads, workers_per_sm);
  plan.grid = static_cast<unsigned>(std::min<int64_t>(p.rows, int64_t{target.sm_count} * workers_per_sm));
  plan.dynamic_smem_bytes = select_smem_bytes(p, policy, floor_marks_words);
  check_shared_memory(p, policy, target, plan.dynamic_smem_bytes);
}

void set_view_config(KernelConfig& config, const Problem& p, const SelectSampledPolicy& sp) {
  const int wide = stride_for_rank(sp.stride_wide, p.k, sp);
  const int narrow = stride_for_rank(sp.stride_narrow, p.k, sp);
  const SampleRanks wide_ranks = sample_ranks(p.k, wide, sp), narrow_ranks = sample_ranks(p.k, narrow, sp);
  config.integer("kViewLoadsInFlight", sp.view_loads_in_flight)
      .integer("kViewBlock", view_block_for_rank(p.k, sp))
      .integer("kStrideWide", wide)
      .integer("kStrideNarrow", narrow)
      .wide("kWideRowThreshold", sp.wide_row_threshold)
      .integer("kQ0Wide", wide_ranks.q0)
      .integer("kQ1Wide", wide_ranks.q1)
      .integer("kQ0Narrow", narrow_ranks.q0)
      .integer("kQ1Narrow", narrow_ranks.q1)
      .integer("kFineTriggerWide", fine_proposal_trigger(p.k, wide, sp))
      .integer("kFineTriggerNarrow", fine_proposal_trigger(p.k, narrow, sp));
}

uint64_t frontier_slices_bytes(const Policy& policy, int64_t workers) {
  return static_cast<uint64_t>(workers) * static_cast<uint64_t>(policy.direct.frontier_global_capacity) * 8u;
}

bool has_bulk_prefetch(const Target& target) { return arch_number(target.arch) >= 90; }

void describe_prefetches(Plan& plan, const Target& target, bool asked, const std::string& what, const std::string& keys) {
  if (!asked) return;
  plan.derived.push_back((has_bulk_prefetch(target) ? what : "no L2 prefetches on " + target.arch +
                                                                 " (bulk prefetches need sm_90)") +
                         " [" + keys + "]");
}

}  // namespace sgtopk::detail
