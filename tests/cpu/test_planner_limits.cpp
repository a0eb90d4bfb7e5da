// The planner refuses plans the target cannot run: a block's dynamic shared
// memory above the architecture's opt-in limit is the caller's error, named
// at compile time (no GPU needed), not a failed cuFuncSetAttribute at load.
#include <gtest/gtest.h>

#include <string>

#include "runtime/error.h"
#include "runtime/plan.h"
#include "runtime/policy.h"
#include "runtime/problem.h"
#include "runtime/target.h"

using namespace sgtopk;
using namespace sgtopk::detail;

namespace {

Plan plan_on(const std::string& arch, int k, bool sorted, const Policy& policy = Policy::defaults()) {
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.k = k;
  p.rows = 64;
  p.width = 100000;
  p.flags = sorted ? SGTOPK_SORTED : 0u;
  const Problem problem = validate_problem(&p);
  const Target target = resolve_target(-1, arch.c_str(), policy.compile.default_arch);
  return make_plan(problem, policy, target);
}

// The status and message of a plan that must be refused.
std::string refusal(const std::string& arch, int k, bool sorted, const Policy& policy = Policy::defaults()) {
  try {
    const Plan plan = plan_on(arch, k, sorted, policy);
    ADD_FAILURE() << "planned " << plan.family << " with " << plan.dynamic_smem_bytes << " B of shared memory on "
                  << arch;
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SGTOPK_ERROR_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  return "";
}

TEST(PlannerLimits, ALargeSharedFrontierNamesItsPolicyKey) {
  const Policy policy = parse_policy_string("[select.direct]\nfrontier_shared_capacity = 16384\n");
  const std::string message = refusal("sm_86", 2048, false, policy);
  EXPECT_NE(message.find("sm_86"), std::string::npos) << message;
  EXPECT_NE(message.find("select.direct.frontier_shared_capacity (now 16384)"), std::string::npos) << message;
  // The same policy fits an sm_90 block (227 KB).
  EXPECT_NO_THROW(plan_on("sm_90", 2048, false, policy));
}

TEST(PlannerLimits, DefaultPlansFitEveryArchitecture) {
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100"}) {
    for (const int k : {1, 2048, 8192}) {
      SCOPED_TRACE(std::string(arch) + " K=" + std::to_string(k));
      EXPECT_NO_THROW(plan_on(arch, k, false));
    }
    EXPECT_NO_THROW(plan_on(arch, 2048, true)) << arch;
  }
  EXPECT_NO_THROW(plan_on("sm_90", 8192, true));
  EXPECT_NO_THROW(plan_on("sm_86", 8192, true));  // the largest sort buffer fits the smallest supported block
}

}  // namespace
