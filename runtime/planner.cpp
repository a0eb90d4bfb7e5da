#include "runtime/plan.h"

#include <algorithm>
#include <sstream>

#include "runtime/error.h"

namespace sgtopk {

namespace {

int ceil_log2(int64_t n) {
  int bits = 0;
  while ((int64_t{1} << bits) < n) ++bits;
  return bits;
}

int64_t next_pow2(int64_t n) { return int64_t{1} << ceil_log2(std::max<int64_t>(n, 1)); }

// Mirrors sizeof(SelectionState) in templates/sgtopk/frontier.cuh, rounded to
// 16 bytes; the generated source static_asserts that the two agree.
constexpr unsigned kSelectionStateBytes = (2048u * 4u + 36u * 4u + 10u * 4u + 8u + 15u) / 16u * 16u;

std::string str(int64_t v) { return std::to_string(v); }
std::string flag(bool v) { return v ? "true" : "false"; }

Plan plan_direct_exact(const Problem& p, const Policy& policy, const Target& target) {
  const SelectDirectPolicy& d = policy.direct;
  Plan plan;
  plan.family = "direct_exact";
  plan.agent_header = "sgtopk/agent_direct_exact.cuh";
  plan.agent = "sgtopk::DirectExactAgent";
  plan.entry = "sgtopk_select_direct_exact";
  plan.block = static_cast<unsigned>(d.block_threads);

  // Short rows stay in registers between the passes (the short-row specialization).
  const int64_t register_capacity = int64_t{d.block_threads} * d.items_per_thread;
  const int register_items = p.width <= register_capacity
                                 ? static_cast<int>((p.width + d.block_threads - 1) / d.block_threads)
                                 : 0;
  const int frontier_shared = d.frontier_shared_capacity;
  const int frontier_global = d.frontier_global_capacity;
  const int64_t sort_slots = p.sorted ? next_pow2(p.k) : 1;

  plan.constants = {
      {"kK", str(p.k)},
      {"kThreads", str(d.block_threads)},
      {"kWidth", str(p.width) + "ll"},
      {"kPitch", str(p.pitch) + "ll"},
      {"kOutPitch", str(p.out_pitch) + "ll"},
      {"kValues", flag(p.values)},
      {"kSorted", flag(p.sorted)},
      {"kStarts", flag(p.starts)},
      {"kRegisterItems", str(register_items)},
      {"kUnroll", str(d.loads_in_flight)},
      {"kPrefetch", flag(d.prefetch_next_chunk)},
      {"kAggregateHistogram", flag(d.aggregate_histogram)},
      {"kEndpointClassify", flag(d.endpoint_classification)},
      {"kVectorLoads", flag(d.vector_bytes == 16)},
      {"kIndexBits", str(std::max(1, ceil_log2(p.width)))},
      {"kFrontierShared", str(frontier_shared)},
      {"kFrontierGlobal", str(frontier_global)},
      {"kSortSlots", str(sort_slots)},
  };

  const unsigned frontier_bytes = static_cast<unsigned>(frontier_shared) * 8u;
  const unsigned sort_bytes = p.sorted ? static_cast<unsigned>(sort_slots) * 8u : 0u;
  plan.dynamic_smem_bytes = kSelectionStateBytes + std::max(frontier_bytes, sort_bytes);

  // Persistent workers: each owns one global frontier slice, so workspace
  // scales with the worker pool, never with rows x width.
  const int64_t workers = std::min<int64_t>(p.rows, int64_t{target.sm_count} * d.workers_per_sm);
  plan.grid = static_cast<unsigned>(workers);
  plan.workspace_bytes = static_cast<uint64_t>(workers) * static_cast<uint64_t>(frontier_global) * 8u;
  return plan;
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
  static const std::vector<std::string> families = {"direct_exact"};
  return families;
}

Plan make_plan(const Problem& problem, const Policy& policy, const Target& target, const std::string& forced_family) {
  if (!forced_family.empty() &&
      std::find(select_families().begin(), select_families().end(), forced_family) == select_families().end()) {
    std::string known;
    for (const auto& f : select_families()) known += (known.empty() ? "" : ", ") + f;
    invalid_argument("family '" + forced_family + "' is unknown (known: " + known + ")");
  }
  // One family so far; the sampled, split and cluster mappings join here.
  Plan plan = plan_direct_exact(problem, policy, target);
  plan.problem = problem;
  plan.policy = policy;
  plan.arch = target.arch;
  return plan;
}

}  // namespace sgtopk
