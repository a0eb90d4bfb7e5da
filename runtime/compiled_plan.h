// The whole pipeline behind sgtopk_compile, as a chain of values each stage
// hands the next:
//   validate_problem -> load_policy -> resolve_target -> make_plan
//   -> generate_source -> make_compile_request -> get_or_compile
//   -> load_kernel -> DeviceWorkspace.
// Each value is kept, so describe and launch read what was decided without
// recomputing it.
#pragma once

#include <sgtopk/sgtopk.h>

#include <memory>
#include <string>
#include <vector>

#include "cache/kernel_cache.h"
#include "runtime/kernel_module.h"
#include "runtime/plan.h"
#include "runtime/target.h"
#include "runtime/workspace.h"

namespace sgtopk::detail {

struct CompiledPlan {
  Target target;
  Plan plan;
  CacheKey key;
  CacheSource source = CacheSource::compiled;
  double compile_ms = 0;  // NVRTC time, 0 when served from a cache
  bool on_disk = false;   // the kernel's entry is in the disk cache
  std::shared_ptr<const std::vector<char>> cubin;
  std::shared_ptr<LoadedKernel> kernel;  // null when compile-only
  DeviceWorkspace own_workspace;         // the plan's own, when asked for
  std::string text;                      // sgtopk_plan_text

  CompiledPlan() = default;
  CompiledPlan(const CompiledPlan&) = delete;
  CompiledPlan& operator=(const CompiledPlan&) = delete;
  ~CompiledPlan();
};

// The policy an options struct asks for: defaults, then the file, then the string.
Policy load_policy(const sgtopk_compile_options& options);

std::unique_ptr<CompiledPlan> compile_plan(const sgtopk_problem* problem, const sgtopk_compile_options* options);

// Human-readable plan: problem, family, constants, geometry, cache, policy.
std::string describe_plan(const CompiledPlan& compiled);

}  // namespace sgtopk::detail
