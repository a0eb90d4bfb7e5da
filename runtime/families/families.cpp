#include "runtime/families/families.h"

namespace sgtopk::detail {

const std::vector<Family>& select_family_table() {
  static const std::vector<Family> table = {
      {"direct_exact", "sgtopk/agent/direct_exact.cuh", "sgtopk::DirectExactAgent", plan_direct_exact},
      {"sampled", "sgtopk/agent/sampled.cuh", "sgtopk::SampledAgent", plan_sampled},
      {"split", "sgtopk/agent/split.cuh", "sgtopk::SplitAgent", plan_split},
      {"short_row", "sgtopk/agent/short_row.cuh", "sgtopk::ShortRowAgent", plan_short_row},
      {"cluster", "sgtopk/agent/cluster.cuh", "sgtopk::ClusterAgent", plan_cluster},
  };
  return table;
}

const std::vector<Family>& filter_family_table() {
  static const std::vector<Family> table = {
      {"filter_row", "sgtopk/agent/filter_row.cuh", "sgtopk::FilterRowAgent", plan_filter_row, SGTOPK_OP_FILTER},
      {"filter_split", "sgtopk/agent/filter_split.cuh", "sgtopk::FilterSplitAgent", plan_filter_split, SGTOPK_OP_FILTER},
  };
  return table;
}

const std::vector<Family>& family_table(sgtopk_operator op) {
  return op == SGTOPK_OP_FILTER ? filter_family_table() : select_family_table();
}

const Family* find_family(sgtopk_operator op, const std::string& name) {
  for (const Family& f : family_table(op))
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace sgtopk::detail
