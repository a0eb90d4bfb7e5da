// The kernel families the planner can choose from: one row each, with its
// agent template and its planning function, in one table per operator. A new
// family is one row in families.cpp and one planning unit beside it.
#pragma once

#include <string>
#include <vector>

#include "runtime/plan.h"

namespace sgtopk::detail {

struct Family {
  std::string name;          // "direct_exact": the name policies, the CLI and plans use
  std::string agent_header;  // the agent template, e.g. "sgtopk/agent/direct_exact.cuh"
  std::string agent;         // its type, instantiated with the generated Config
  // Fills the plan's launch geometry, kernel constants and workspace.
  void (*plan)(Plan& plan, const Problem& problem, const Policy& policy, const Target& target);
  sgtopk_operator op = SGTOPK_OP_SELECT;

  // The extern "C" kernel: sgtopk_select_direct_exact; the filter's family
  // names begin with "filter_" already (sgtopk_filter_row).
  std::string entry() const { return op == SGTOPK_OP_FILTER ? "sgtopk_" + name : "sgtopk_select_" + name; }
};

const std::vector<Family>& select_family_table();
const std::vector<Family>& filter_family_table();
const std::vector<Family>& family_table(sgtopk_operator op);
// nullptr when no family of the operator has that name.
const Family* find_family(sgtopk_operator op, const std::string& name);

// The planning units.
void plan_direct_exact(Plan& plan, const Problem& problem, const Policy& policy, const Target& target);
void plan_sampled(Plan& plan, const Problem& problem, const Policy& policy, const Target& target);
void plan_split(Plan& plan, const Problem& problem, const Policy& policy, const Target& target);
void plan_cluster(Plan& plan, const Problem& problem, const Policy& policy, const Target& target);
void plan_short_row(Plan& plan, const Problem& problem, const Policy& policy, const Target& target);
void plan_filter_row(Plan& plan, const Problem& problem, const Policy& policy, const Target& target);
void plan_filter_split(Plan& plan, const Problem& problem, const Policy& policy, const Target& target);
// The filter families' shared pieces: the CTAs of `threads` and `bytes` of
// shared memory an SM holds at 64 registers a thread, and the Config of
// filter_row's constants (a rule it applies noted in plan.derived).
int filter_ctas_per_sm(int threads, unsigned bytes, const std::string& arch);
KernelConfig filter_config(Plan& plan, const Problem& problem, const FilterPolicy& policy, int threads, int loads_in_flight,
                           int prefetch_ahead_steps);
// CTAs per row of a filter_split plan (1: too few fit filter.split.min_segments).
int filter_split_segments(const Problem& problem, const FilterSplitPolicy& policy, const Target& target);
// A filter_row plan's CTA: filter.few_rows_block_threads and
// few_rows_loads_in_flight for at most filter.few_rows_per_sm rows an SM;
// filter.many_rows_block_threads (and many_rows_candidate_buffer) from
// filter.many_rows_per_sm rows an SM in mask-only plans; else
// filter.block_threads; loads_in_flight past the few rows.
struct FilterRowCta {
  enum Rows { kFewRows, kRows, kManyRows };
  int threads, loads_in_flight;
  Rows rows;
  bool few_rows() const { return rows == kFewRows; }
};
FilterRowCta filter_row_cta(const Problem& problem, const FilterPolicy& policy, int sm_count);
// Whether a cluster plan's clusters all fit the GPU at once on an arch that
// has clusters (sm_90 or newer).
bool cluster_fits(const Problem& problem, const SelectClusterPolicy& policy, const Target& target);
// CTAs per row of a split plan (select.split.split_counts; 1: none fits).
int split_segments(const Problem& problem, const SelectSplitPolicy& policy, int sm_count);

// A short-row plan's CTA: the fewest threads (a power of two, at least
// select.short_row.min_block_threads) that hold the widest row in
// items_per_thread scores each, else max_block_threads with more each (in
// whole runs of four); items 0 when even kShortRowMaxItems a thread cannot
// hold it. Launches of at most one row per SM size for
// few_rows_items_per_thread, up to 1024.
constexpr int kShortRowMaxItems = 32;
struct ShortRowShape {
  int threads;
  int items;
  bool few_rows;  // at most a row per SM
};
ShortRowShape short_row_shape(const Problem& problem, const SelectShortRowPolicy& policy, int sm_count);

}  // namespace sgtopk::detail
