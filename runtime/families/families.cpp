#include "runtime/families/families.h"

namespace sgtopk::detail {

const std::vector<Family>& select_family_table() {
  static const std::vector<Family> table = {
      {"direct_exact", "sgtopk/agent/direct_exact.cuh", "sgtopk::DirectExactAgent", plan_direct_exact},
      {"sampled", "sgtopk/agent/sampled.cuh", "sgtopk::SampledAgent", plan_sampled},
      {"split", "sgtopk/agent/split.cuh", "sgtopk::SplitAgent", plan_split},
      {"short_row", "sgtopk/agent/short_row.cuh", "sgtopk::ShortRowAgent", plan_short_row},
  };
  return table;
}

const Family* find_family(const std::string& name) {
  for (const Family& f : select_family_table())
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace sgtopk::detail
