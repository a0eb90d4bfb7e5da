// Stage 2: the plan. Which kernel family, every specialization constant, the
// launch geometry and the workspace: everything the later stages consume.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/kernel_config.h"
#include "runtime/policy.h"
#include "runtime/problem.h"
#include "runtime/target.h"

namespace sgtopk::detail {

struct Plan {
  Problem problem;
  Policy policy;
  std::string arch;
  std::string family;       // e.g. "direct_exact"
  std::string agent_header; // the template that implements it
  std::string agent;        // the agent type in it, instantiated with the Config
  std::string entry;        // extern "C" kernel name
  std::string reason;       // why the planner chose the family, in policy keys (or "forced")
  // Policy values the problem changed on their way into the constants (a
  // sample rank K raised, a frontier K grew), each with the keys that did it.
  std::vector<std::string> derived;
  // The specialization constants, in order; they become the generated Config.
  KernelConfig config;
  unsigned grid = 0, block = 0;
  unsigned min_blocks_per_sm = 1;  // __launch_bounds__ occupancy hint: the persistent workers per SM
  unsigned cluster = 1;            // CTAs a thread-block cluster (the kernel's __cluster_dims__), 1: none
  // The entry's parameter __grid_constant__: the agent passes it by
  // reference to out-of-line pieces without a copy to the stack. Not for
  // every family: it moved ptxas's allocation, and two select kernels spilled.
  bool grid_constant_params = false;
  unsigned dynamic_smem_bytes = 0;
  uint64_t workspace_bytes = 0;
  // Launches of the kernel a call makes, one after another on its stream
  // (a graph chains as many nodes); launch i passes FilterParams::phase i.
  unsigned launches = 1;
  // Launch 1's own kernel, in the same module, where `entry` is not empty:
  // filter_row's top-p-alone rows by pattern counts in CTAs of 1024, beside
  // the first kernel's other rows in CTAs of 512. Else launch 1, if any,
  // runs the first kernel again.
  struct Kernel {
    std::string entry;
    KernelConfig config;
    unsigned grid = 0, block = 0, min_blocks_per_sm = 1, dynamic_smem_bytes = 0;
  };
  Kernel second;

  // A constant as the generated source spells it ("true", "2048").
  std::string constant(const std::string& name) const { return config.text(name); }
  // "name=value" lines, for sgtopk_plan_info and `sgtopk plan`.
  std::string parameters_text() const;
};

// The kernel families the planner can emit, by name (runtime/families/families.h).
std::vector<std::string> select_families();
std::vector<std::string> filter_families();

// Chooses a family (or takes `forced_family`) and its parameters.
Plan make_plan(const Problem& problem, const Policy& policy, const Target& target, const std::string& forced_family = "");

}  // namespace sgtopk::detail
