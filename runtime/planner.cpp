#include "runtime/plan.h"

#include <algorithm>
#include <sstream>

#include "runtime/error.h"
#include "reference/sampled_route.h"
#include "runtime/target.h"

namespace sgtopk::detail {

namespace {

int ceil_log2(int64_t n) {
  int bits = 0;
  while ((int64_t{1} << bits) < n) ++bits;
  return bits;
}

int64_t next_pow2(int64_t n) { return int64_t{1} << ceil_log2(std::max<int64_t>(n, 1)); }

// Mirrors sizeof(SelectionState) in templates/sgtopk/frontier.cuh, rounded to
// 16 bytes; the generated source static_asserts that the two agree.
// (histogram, the uncounted word, scratch, 17 four-byte fields, the u64 prefix)
constexpr unsigned kSelectionStateBytes = (2048u * 4u + 4u + 40u * 4u + 17u * 4u + 8u + 15u) / 16u * 16u;
// __launch_bounds__ hint: the workers that fit an SM's 2048 threads.
unsigned occupancy_hint(int threads, int workers_per_sm) {
  return static_cast<unsigned>(std::max(1, std::min(workers_per_sm, 2048 / threads)));
}

std::string str(int64_t v) { return std::to_string(v); }
std::string flag(bool v) { return v ? "true" : "false"; }

// What each select family sets for itself in the body both run (the
// direct-exact body is also the sampled family's recovery route).
struct FamilyBody {
  int threads;
  int loads_in_flight;        // per full-row pass
  int small_group;            // refinement's rank-counting finish
  int register_items = 0;     // short rows kept in registers (direct only)
  int floor_mark_words = 0;   // pass 1's marks for pass 2 (direct only)
  int marked_bin_chunks = 0;  // chunks whose marked vectors keep their bins (direct only)
};

// Raises per chunk as the kernel spaces them (every warps/n-th claim, the
// last always): a power of two, so it divides the block's warps, and at most
// their count.
int raises_per_chunk(int asked, int threads) {
  int n = 1;
  while (n * 2 <= asked && n * 2 <= threads / 32) n *= 2;
  return n;
}

// The constants every select family shares, so both carry the body's whole Config.
std::vector<std::pair<std::string, std::string>> select_constants(const Problem& p, const Policy& policy,
                                                                  const FamilyBody& body) {
  const SelectDirectPolicy& d = policy.direct;
  const int threads = body.threads, loads = body.loads_in_flight, floor_mark_words = body.floor_mark_words;
  const int64_t sort_slots = p.sorted ? next_pow2(p.k) : 1;
  return {
      {"kK", str(p.k)},
      {"kThreads", str(threads)},
      {"kWidth", str(p.width) + "ll"},
      {"kPitch", str(p.pitch) + "ll"},
      {"kOutPitch", str(p.out_pitch) + "ll"},
      {"kValues", flag(p.values)},
      {"kSorted", flag(p.sorted)},
      {"kStarts", flag(p.starts)},
      {"kRouteStats", flag(p.route_stats)},
      {"kRegisterItems", str(body.register_items)},
      {"kUnroll", str(loads)},
      {"kPrefetch", flag(d.prefetch_next_chunk)},
      {"kPrefetchL2", str(d.prefetch_l2_chunks)},
      {"kAggregateHistogram", flag(d.aggregate_histogram)},
      {"kEndpointClassify", flag(d.endpoint_classification)},
      {"kHistogramBackward", flag(d.histogram_backward)},
      {"kVectorLoads", flag(d.vector_bytes == 16)},
      {"kIndexBits", str(std::max(1, ceil_log2(p.width)))},
      {"kFrontierShared", str(d.frontier_shared_capacity)},
      {"kFrontierGlobal", str(d.frontier_global_capacity)},
      {"kSortSlots", str(sort_slots)},
      {"kSmallGroup", str(std::min({body.small_group, threads, d.frontier_shared_capacity + d.frontier_global_capacity}))},
      {"kFloorMarkWords", str(floor_mark_words)},
      {"kSparseVectors", str(floor_mark_words > 0 ? d.sparse_vectors : 0)},
      {"kGatherMarks", flag(floor_mark_words > 0 && d.gather_marked)},
      {"kMarkedBinChunks", str(body.marked_bin_chunks)},
      {"kGatherBatch", str(d.gather_batch > 0 ? d.gather_batch : loads)},
      {"kRaiseAtClaim", flag(d.raise_at_claim)},
      {"kRaisesPerChunk", str(raises_per_chunk(d.raises_per_chunk, threads))},
      {"kWorkUnits", flag(d.work_units && d.vector_bytes == 16 && !d.prefetch_next_chunk && d.prefetch_l2_chunks == 0)},
  };
}

// Dynamic shared memory: the selection state, then the frontier (aliased by
// the sort buffer).
unsigned frontier_shared_bytes(const Policy& policy) {
  return static_cast<unsigned>(policy.direct.frontier_shared_capacity) * 8u;
}
unsigned sort_buffer_bytes(const Problem& p) { return p.sorted ? static_cast<unsigned>(next_pow2(p.k)) * 8u : 0u; }
unsigned select_smem_bytes(const Problem& p, const Policy& policy) {
  return kSelectionStateBytes + std::max(frontier_shared_bytes(policy), sort_buffer_bytes(p));
}

// How the direct family's CTA streams a row: its threads, each issuing
// loads_in_flight 16-byte loads per block-wide chunk.
struct ChunkShape {
  int threads;
  int loads_in_flight;
};

// Block-wide chunks (threads x loads_in_flight 16-byte vectors) of the
// widest row's body.
int64_t body_chunks(const Problem& p, const ChunkShape& c) {
  const int64_t chunk_vectors = int64_t{c.threads} * c.loads_in_flight;
  return ((p.width + 3) / 4 + chunk_vectors - 1) / chunk_vectors;
}

// The direct family's floor marks (templates/sgtopk/floor_marks.cuh): per
// thread, loads_in_flight bits (rounded up to a power of two) for each
// block-wide chunk of the widest row's 16-byte body, in 32-bit words.
int floor_mark_words(const Problem& p, const ChunkShape& c) {
  const int bits = c.loads_in_flight <= 1 ? 1 : c.loads_in_flight <= 2 ? 2 : c.loads_in_flight <= 4 ? 4 : 8;
  return static_cast<int>((body_chunks(p, c) + 32 / bits - 1) / (32 / bits));
}
unsigned floor_marks_bytes(int words, const ChunkShape& c) {
  return static_cast<unsigned>(words) * static_cast<unsigned>(c.threads) * 4u;
}
// With them, the highest coarse bin (2 bytes) of each vector of the first
// chunks the histogram pass reads, in words.
unsigned marked_bins_bytes(int chunks, const ChunkShape& c) {
  return static_cast<unsigned>((int64_t{chunks} * c.threads * c.loads_in_flight + 1) / 2 * 4);
}

// The most dynamic shared memory one block may opt into, per architecture
// (CUDA programming guide, "Technical Specifications"); 0: not known here.
unsigned max_dynamic_shared_bytes(int arch) {
  switch (arch) {
    case 70: case 72: return 96u * 1024u;
    case 75: return 64u * 1024u;
    case 80: case 87: return 163u * 1024u;
    case 86: case 89: case 120: case 121: return 99u * 1024u;
    case 90: case 100: case 101: case 103: case 110: return 227u * 1024u;
    default: return 0u;
  }
}

// A plan whose block cannot get its shared memory on the target is the
// caller's error (a policy or a K too large for that GPU): say so at compile
// time, not as a failed cuFuncSetAttribute at load.
void check_shared_memory(const Problem& p, const Policy& policy, const Target& target, unsigned bytes) {
  const unsigned limit = max_dynamic_shared_bytes(arch_number(target.arch));
  if (limit == 0u || bytes <= limit) return;
  const bool sort_buffer = sort_buffer_bytes(p) > frontier_shared_bytes(policy);
  invalid_argument("the plan needs " + std::to_string(bytes) + " bytes of shared memory per block but " + target.arch +
                   " allows at most " + std::to_string(limit) + ": " +
                   (sort_buffer ? "the sorted option at K=" + std::to_string(p.k) +
                                      " needs a sort buffer of next_pow2(K) x 8 bytes (use a smaller K, or sort outside)"
                                : "lower select.direct.frontier_shared_capacity (now " +
                                      std::to_string(policy.direct.frontier_shared_capacity) + ")"));
}

// Persistent workers: each owns one global frontier slice, so workspace
// scales with the worker pool, never with rows x width.
uint64_t frontier_slices_bytes(const Policy& policy, int64_t workers) {
  return static_cast<uint64_t>(workers) * static_cast<uint64_t>(policy.direct.frontier_global_capacity) * 8u;
}

// What every persistent select family shares: its names, one worker CTA of
// `threads` per row at a time, `workers_per_sm` of them per SM (never more
// workers than rows), and the launch geometry that follows.
Plan persistent_plan(const std::string& family, const std::string& agent_file, const std::string& agent, int threads,
                     int workers_per_sm, const Problem& p, const Policy& policy, const Target& target,
                     unsigned extra_smem_bytes = 0u) {
  Plan plan;
  plan.family = family;
  plan.agent_header = "sgtopk/" + agent_file;
  plan.agent = "sgtopk::" + agent;
  plan.entry = "sgtopk_select_" + family;
  plan.block = static_cast<unsigned>(threads);
  plan.min_blocks_per_sm = occupancy_hint(threads, workers_per_sm);
  plan.grid = static_cast<unsigned>(std::min<int64_t>(p.rows, int64_t{target.sm_count} * workers_per_sm));
  plan.dynamic_smem_bytes = select_smem_bytes(p, policy) + extra_smem_bytes;
  check_shared_memory(p, policy, target, plan.dynamic_smem_bytes);
  return plan;
}

Plan plan_direct_exact(const Problem& p, const Policy& policy, const Target& target) {
  const SelectDirectPolicy& d = policy.direct;
  // Short rows stay in registers between the passes (the short-row
  // specialization), in CTAs of their own size, as many threads per SM.
  // Streamed rows run block_threads x workers_per_sm per SM; a launch with
  // no more rows than SMs gives each row its SM's threads in one CTA (up to
  // 1024), since no second row would share the SM.
  const int threads_per_sm = d.block_threads * d.workers_per_sm;
  const bool in_registers = p.width <= int64_t{d.register_block_threads} * d.items_per_thread;
  const bool row_per_sm = !in_registers && d.workers_per_sm > 1 && p.rows <= target.sm_count;
  const int threads = in_registers ? d.register_block_threads
                      : row_per_sm ? std::min(1024, threads_per_sm)
                                   : d.block_threads;
  const int workers_per_sm = in_registers ? std::max(1, threads_per_sm / d.register_block_threads)
                             : row_per_sm ? 1
                                          : d.workers_per_sm;
  const int register_items = in_registers ? static_cast<int>((p.width + threads - 1) / threads) : 0;
  const ChunkShape shape{threads, d.loads_in_flight};
  // Streamed rows with a 16-byte body get floor marks where they fit beside
  // the rest of the block's shared memory (a plan never fails for them).
  const unsigned limit = max_dynamic_shared_bytes(arch_number(target.arch));
  int mark_words = 0;
  if (d.floor_marks && register_items == 0 && d.vector_bytes == 16) {
    mark_words = floor_mark_words(p, shape);
    if (limit == 0u || select_smem_bytes(p, policy) + floor_marks_bytes(mark_words, shape) > limit) mark_words = 0;
  }
  // With marks, the bins of the first chunks read (no more chunks than the
  // widest row has), where they fit beside the rest (else plain marks).
  int bin_chunks = 0;
  if (mark_words > 0 && d.marked_bin_chunks > 0) {
    bin_chunks = static_cast<int>(std::min<int64_t>(d.marked_bin_chunks, body_chunks(p, shape)));
    if (select_smem_bytes(p, policy) + floor_marks_bytes(mark_words, shape) + marked_bins_bytes(bin_chunks, shape) > limit)
      bin_chunks = 0;
  }
  Plan plan = persistent_plan("direct_exact", "agent_direct_exact.cuh", "DirectExactAgent", threads,
                              workers_per_sm, p, policy, target,
                              floor_marks_bytes(mark_words, shape) + marked_bins_bytes(bin_chunks, shape));
  plan.constants = select_constants(
      p, policy, FamilyBody{threads, d.loads_in_flight, d.small_group, register_items, mark_words, bin_chunks});
  plan.workspace_bytes = frontier_slices_bytes(policy, plan.grid);
  return plan;
}

Plan plan_sampled(const Problem& p, const Policy& policy, const Target& target) {
  const SelectSampledPolicy& sp = policy.sampled;
  Plan plan = persistent_plan("sampled", "agent_sampled.cuh", "SampledAgent", sp.block_threads, sp.workers_per_sm, p,
                              policy, target);

  // No register rows and no floor marks in the recovery.
  plan.constants = select_constants(p, policy, FamilyBody{sp.block_threads, sp.loads_in_flight, sp.small_group});
  // Strides, view block and sample ranks are fixed here, once, by the
  // functions the CPU reference uses (reference::stride_for_rank,
  // view_block_for_rank, sample_rank), never on the GPU.
  const int wide = reference::stride_for_rank(sp.stride_wide, p.k, sp);
  const int narrow = reference::stride_for_rank(sp.stride_narrow, p.k, sp);
  const auto rank = [&](double margin, int stride) { return str(reference::sample_rank(margin, p.k, stride)); };
  plan.constants.insert(plan.constants.end(), {
      {"kViewGather", str(sp.view_loads_in_flight)},
      {"kViewBlock", str(reference::view_block_for_rank(p.k, sp))},
      {"kStrideWide", str(wide)},
      {"kStrideNarrow", str(narrow)},
      {"kWideRowThreshold", str(sp.wide_row_threshold) + "ll"},
      {"kQ0Wide", rank(sp.primary_margin, wide)},
      {"kQ1Wide", rank(sp.secondary_margin, wide)},
      {"kQ0Narrow", rank(sp.primary_margin, narrow)},
      {"kQ1Narrow", rank(sp.secondary_margin, narrow)},
      {"kFineTriggerWide", str(reference::fine_proposal_trigger(p.k, wide, sp))},
      {"kFineTriggerNarrow", str(reference::fine_proposal_trigger(p.k, narrow, sp))},
  });
  // The row counters (kRowClaimsBytes in common.cuh), then the slices.
  plan.workspace_bytes = kRowClaimsBytes + frontier_slices_bytes(policy, plan.grid);
  return plan;
}

// The planner's choice: sampling pays on long rows, and its persistent
// one-CTA-per-row schedule needs enough rows to fill the GPU.
std::string choose_family(const Problem& p, const Policy& policy, const Target& target) {
  const SelectDispatchPolicy& d = policy.dispatch;
  const bool long_rows = p.width >= d.sampled_min_width && p.width > p.k;
  const bool fills_gpu = p.rows >= int64_t{target.sm_count} * d.sampled_min_rows_per_sm;
  return long_rows && fills_gpu ? "sampled" : "direct_exact";
}

}  // namespace

const std::string& Plan::constant(const std::string& name) const {
  for (const auto& [key, value] : constants)
    if (key == name) return value;
  fail(SGTOPK_ERROR_INTERNAL, "plan has no constant " + name);
}

std::string Plan::parameters_text() const {
  std::ostringstream s;
  for (const auto& [key, value] : constants) s << key << "=" << value << "\n";
  return s.str();
}

const std::vector<std::string>& select_families() {
  static const std::vector<std::string> families = {"direct_exact", "sampled"};
  return families;
}

Plan make_plan(const Problem& problem, const Policy& policy, const Target& target, const std::string& forced_family) {
  if (!forced_family.empty() &&
      std::find(select_families().begin(), select_families().end(), forced_family) == select_families().end()) {
    std::string known;
    for (const auto& f : select_families()) known += (known.empty() ? "" : ", ") + f;
    invalid_argument("family '" + forced_family + "' is unknown (known: " + known + ")");
  }
  const std::string family = forced_family.empty() ? choose_family(problem, policy, target) : forced_family;
  Plan plan = family == "sampled" ? plan_sampled(problem, policy, target) : plan_direct_exact(problem, policy, target);
  plan.problem = problem;
  plan.policy = policy;
  plan.arch = target.arch;
  return plan;
}

}  // namespace sgtopk::detail
