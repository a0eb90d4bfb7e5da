// What the select families share on the host: the body every one of them
// runs (the direct-exact body is also the sampled family's recovery route),
// its constants, and the persistent-worker launch geometry.
#pragma once

#include <cstdint>

#include "runtime/plan.h"

namespace sgtopk::detail {

// What each select family sets for itself in the shared body.
struct SelectBody {
  int threads;
  int loads_in_flight;          // per full-row pass
  int small_group;              // refinement's rank-counting finish
  int register_items = 0;       // short rows kept in registers (direct only)
  int floor_mark_words = 0;     // pass 1's marks for pass 2 (direct only)
  int marked_bin_chunks = 0;    // chunks whose marked vectors keep their bins (direct only)
};

int64_t next_pow2(int64_t n);

// The slots of the sorted option's buffer: next_pow2(K) (1 when unsorted).
int sort_slots(const Problem& p);

// Entries of a plan's shared frontier (kFrontierSharedCapacity):
// select.direct.frontier_shared_capacity, or frontier_shared_per_k x K
// rounded up to 256 when larger, up to frontier_shared_limit.
int frontier_shared_entries(int k, const Policy& policy);

// `sgtopk plan`'s account of the view constants for rank K (Plan::derived):
// stride, block and sample ranks, and which keys moved them from the policy.
std::string describe_view(int k, const SelectSampledPolicy& sp);
// The same for the shared frontier; empty when it is frontier_shared_capacity.
std::string describe_frontier(int k, const Policy& policy);

// Dynamic shared memory of a select block (templates/sgtopk/abi.h), with
// `floor_marks_words` of the direct family's marks.
unsigned select_smem_bytes(const Problem& p, const Policy& policy, int floor_marks_words = 0);

// The most dynamic shared memory one block may opt into on `arch` ("sm_90");
// 0: not known here.
unsigned max_dynamic_shared_bytes(const std::string& arch);

// Refuses (invalid argument, naming the knob or option to change) a block
// of `bytes` of dynamic shared memory that the target cannot give.
void check_shared_memory(const Problem& p, const Policy& policy, const Target& target, unsigned bytes);

// The constants of the shared body, in every select family's Config.
KernelConfig select_body_config(const Problem& p, const Policy& policy, const SelectBody& body);

// One worker CTA of `threads` per row at a time, `workers_per_sm` of them
// per SM (never more workers than rows): grid, block, occupancy hint and
// shared memory (refused when the target cannot give it).
void set_persistent_geometry(Plan& plan, int threads, int workers_per_sm, const Problem& p, const Policy& policy,
                             const Target& target, int floor_marks_words = 0);

// The view constants of the sampled proposal (the sampled and split
// families): strides, view block and sample ranks, fixed here once by the
// functions the CPU reference uses (runtime/sampled_view.h), never on the GPU.
void set_view_config(KernelConfig& config, const Problem& p, const SelectSampledPolicy& view);

// Each persistent worker owns one global frontier slice, so the workspace
// scales with the worker pool, never with rows x width.
uint64_t frontier_slices_bytes(const Policy& policy, int64_t workers);

// L2 bulk prefetches (cp.async.bulk.prefetch) are sm_90's: true when the
// target has them. Where the policy asks for some (`asked`), the plan's
// derived line: `what` (the prefetches) or, before sm_90, that the plan goes
// without them; `keys` names the policy keys.
bool has_bulk_prefetch(const Target& target);
void describe_prefetches(Plan& plan, const Target& target, bool asked, const std::string& what, const std::string& keys);

}  // namespace sgtopk::detail
