// Stage 2: the plan. The planner chooses a family from the family table (or
// takes the one asked for) and lets the family's planning unit fill in the
// launch geometry, the kernel constants and the workspace.
#include "runtime/plan.h"

#include <sstream>

#include "runtime/error.h"
#include "runtime/families/families.h"

namespace sgtopk::detail {

namespace {

// Rows a CTA holds in registers take the short-row family. Sampling pays on
// long rows, and its persistent one-CTA-per-row schedule needs enough rows to
// fill the GPU; fewer long rows are split over several
// CTAs each (when a split count fits); the rest stay row-local and exact.
// Returns the family and, in `reason`, the thresholds that decided it.
std::string choose_family(const Problem& p, const Policy& policy, const Target& target, std::string* reason) {
  const SelectDispatchPolicy& d = policy.dispatch;
  const SelectSplitPolicy& split = policy.split;
  const std::string rows = "rows " + std::to_string(p.rows), width = "width " + std::to_string(p.width);
  const std::string sms = std::to_string(target.sm_count) + " SMs";
  const SelectShortRowPolicy& short_row = policy.short_row;
  const ShortRowShape shape = short_row_shape(p, short_row, target.sm_count);
  if (p.width <= short_row.max_width && shape.items > 0) {
    *reason = width + " <= select.short_row.max_width " + std::to_string(short_row.max_width) + ": one CTA of " +
              std::to_string(shape.threads) + " threads a row, " + std::to_string(shape.items) +
              " scores a thread (select.short_row." +
              (p.rows <= target.sm_count ? "few_rows_items_per_thread " + std::to_string(short_row.few_rows_items_per_thread) +
                                               " for " + rows + " <= " + sms
                                         : "items_per_thread " + std::to_string(short_row.items_per_thread) +
                                               ", max_block_threads " + std::to_string(short_row.max_block_threads)) +
              ", min_block_threads " + std::to_string(short_row.min_block_threads) + ")";
    return "short_row";
  }
  const bool long_rows = p.width >= d.sampled_min_width && p.width > p.k;
  const bool fills_gpu = p.rows >= int64_t{target.sm_count} * d.sampled_min_rows_per_sm;
  if (long_rows && fills_gpu) {
    *reason = width + " >= select.dispatch.sampled_min_width " + std::to_string(d.sampled_min_width) + " and " + rows +
              " >= " + sms + " x select.dispatch.sampled_min_rows_per_sm " + std::to_string(d.sampled_min_rows_per_sm);
    return "sampled";
  }
  const SelectClusterPolicy& cluster = policy.cluster;
  // Why the cluster family does not take this shape ("" when it does).
  const std::string no_cluster =
      p.rows > cluster.max_rows
          ? rows + " > select.cluster.max_rows " + std::to_string(cluster.max_rows)
      : p.width < cluster.min_width || p.width <= p.k
          ? width + " < select.cluster.min_width " + std::to_string(cluster.min_width) + " (or <= K)"
      : !cluster_fits(p, cluster, target)
          ? target.arch + " has no clusters, or rows x select.cluster.cluster_size " +
                std::to_string(cluster.cluster_size) + " > " + sms
          : "";
  if (no_cluster.empty()) {
    *reason = rows + " <= select.cluster.max_rows " + std::to_string(cluster.max_rows) + ", " + width +
              " >= select.cluster.min_width " + std::to_string(cluster.min_width) + ", " + target.arch +
              " has clusters and rows x select.cluster.cluster_size " + std::to_string(cluster.cluster_size) + " <= " +
              sms + ": one cluster a row, each of its CTAs over one segment";
    return "cluster";
  }
  const bool few_rows = p.rows <= int64_t{target.sm_count} * split.max_rows_per_sm;
  const int segments = split_segments(p, split, target.sm_count);
  if (p.width >= split.min_width && p.width > p.k && few_rows && segments > 1) {
    *reason = width + " >= select.split.min_width " + std::to_string(split.min_width) + ", " + rows + " <= " + sms +
              " x select.split.max_rows_per_sm " + std::to_string(split.max_rows_per_sm) + ": " +
              std::to_string(segments) + " CTAs a row (the largest of select.split.split_counts within " +
              std::to_string(split.ctas_per_sm) + " CTA(s) per SM and segments of select.split.min_segment_width " +
              std::to_string(split.min_segment_width) + "); not cluster: " + no_cluster;
    return "split";
  }
  *reason = "neither sampled (" + width + " vs select.dispatch.sampled_min_width " + std::to_string(d.sampled_min_width) +
            ", " + rows + " vs " + sms + " x sampled_min_rows_per_sm " + std::to_string(d.sampled_min_rows_per_sm) +
            "), short_row (" + width + " vs select.short_row.max_width " + std::to_string(short_row.max_width) + ") nor split (" + width + " vs select.split.min_width " + std::to_string(split.min_width) + ", " +
            std::to_string(segments) + " CTA(s) a row fit select.split.split_counts): row-local exact";
  return "direct_exact";
}

// filter_split where at least filter.split.min_segments CTAs a row fit the
// grid and the vocabulary; else filter_row.
std::string choose_filter_family(const Problem& problem, const Policy& policy, const Target& target, std::string* reason) {
  const std::string rows = std::to_string(problem.rows) + " rows", sms = std::to_string(target.sm_count) + " SMs";
  const FilterSplitPolicy& fs = policy.filter_split;
  const int segments = filter_split_segments(problem, fs, target);
  const std::string route =
      policy.filter.sample_size == 0 && policy.filter.top_p_sample_size == 0
          ? std::string("filter.sample_size and top_p_sample_size 0: the exact route (digit histograms over the row)")
          : "a sample (filter.sample_size " + std::to_string(policy.filter.sample_size) +
                " values in runs of one 32-byte sector; top-p alone filter.top_p_sample_size " +
                std::to_string(policy.filter.top_p_sample_size) + " single values) proposes a threshold, one pass gathers the keys above it and the decisions run over "
                "them (top-p alone: one more pass for the row's mass), the exact route where they do not hold "
                "the boundary";
  if (segments > 1) {
    *reason = "a few rows: " + std::to_string(segments) + " segments a row of at least filter.split.min_segment_width " +
              std::to_string(fs.min_segment_width) + " (" + rows + " x segments within " + sms +
              " x filter.split.ctas_per_sm " + std::to_string(fs.ctas_per_sm) +
              (problem.filter_candidates || problem.filter_sample ? " (1 with the candidate or sample output)" : "") + ", at least filter.split.min_segments " +
              std::to_string(fs.min_segments) + "), " + std::to_string(fs.block_threads) +
              " threads a CTA; every CTA of a row samples the same threshold, the last to arrive decides the row; " +
              "rows without top-k on one CTA as filter_row; " + route;
    return "filter_split";
  }
  const FilterRowCta cta = filter_row_cta(problem, policy.filter, target.sm_count);
  const std::string few_per_sm = " x filter.few_rows_per_sm " + std::to_string(policy.filter.few_rows_per_sm),
                    many_per_sm = " x filter.many_rows_per_sm " + std::to_string(policy.filter.many_rows_per_sm);
  const std::string threads = std::to_string(cta.threads) + " threads (" + rows;
  *reason = "one CTA a row of " +
            (cta.rows == FilterRowCta::kFewRows
                 ? "filter.few_rows_block_threads " + threads + " within " + sms + few_per_sm + ")"
             : cta.rows == FilterRowCta::kManyRows
                 ? "filter.many_rows_block_threads " + threads + " from " + sms + many_per_sm + ", the mask only)"
                 : "filter.block_threads " + threads + " past " + sms + few_per_sm +
                       (policy.filter.many_rows_per_sm > 0 && !problem.filter_candidates && !problem.filter_sample
                            ? ", below " + sms + many_per_sm
                            : std::string()) +
                       ")") +
            ", " + std::to_string(cta.loads_in_flight) + " loads in flight (fewer than filter.split.min_segments " +
            std::to_string(fs.min_segments) + " segments a row fit); " + route;
  return "filter_row";
}

}  // namespace

std::string Plan::parameters_text() const {
  std::ostringstream s;
  for (const auto& [key, value] : config.entries()) s << key << "=" << KernelConfig::value_text(value) << "\n";
  for (const auto& [key, value] : second.config.entries())
    s << "second." << key << "=" << KernelConfig::value_text(value) << "\n";
  return s.str();
}

std::vector<std::string> select_families() {
  std::vector<std::string> names;
  for (const Family& f : select_family_table()) names.push_back(f.name);
  return names;
}

std::vector<std::string> filter_families() {
  std::vector<std::string> names;
  for (const Family& f : filter_family_table()) names.push_back(f.name);
  return names;
}

Plan make_plan(const Problem& problem, const Policy& policy, const Target& target, const std::string& forced_family) {
  std::string reason = "forced (options.family / --family)";
  const bool filter = problem.op == SGTOPK_OP_FILTER;
  const std::string name = !forced_family.empty() ? forced_family
                           : filter               ? choose_filter_family(problem, policy, target, &reason)
                                                  : choose_family(problem, policy, target, &reason);
  const Family* family = find_family(problem.op, name);
  if (family == nullptr) {
    std::string known;
    for (const Family& f : family_table(problem.op)) known += (known.empty() ? "" : ", ") + f.name;
    const bool other_op = find_family(filter ? SGTOPK_OP_SELECT : SGTOPK_OP_FILTER, name) != nullptr;
    invalid_argument("family '" + name + "' is " +
                     (other_op ? std::string(filter ? "a select family, and this is a filter problem"
                                                    : "a filter family, and this is a select problem")
                               : std::string("unknown")) +
                     " (known: " + known + ")");
  }
  Plan plan;
  plan.family = family->name;
  plan.agent_header = family->agent_header;
  plan.agent = family->agent;
  plan.entry = family->entry();
  plan.reason = reason;
  family->plan(plan, problem, policy, target);
  plan.problem = problem;
  plan.policy = policy;
  plan.arch = target.arch;
  return plan;
}

}  // namespace sgtopk::detail
