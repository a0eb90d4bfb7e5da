// The whole pipeline behind sgtopk_compile: validate -> policy -> target ->
// plan -> generate -> cache or NVRTC -> load. Each stage's value is kept, so
// describe/launch read what was decided without recomputing it.
#pragma once

#include <sgtopk/sgtopk.h>

#include <memory>
#include <string>
#include <vector>

#include "cache/kernel_cache.h"
#include "runtime/codegen.h"
#include "runtime/kernel_module.h"
#include "runtime/plan.h"
#include "runtime/target.h"

namespace sgtopk {

struct CompiledPlan {
  Target target;
  Plan plan;
  CacheKey key;
  CacheSource source = CacheSource::compiled;
  double compile_ms = 0;  // NVRTC time, 0 when served from a cache
  std::shared_ptr<const std::vector<char>> cubin;
  std::shared_ptr<LoadedKernel> kernel;  // null when compile-only
  uint64_t own_workspace = 0;            // device allocation owned by the plan, or 0
  std::string text;                      // sgtopk_plan_text

  CompiledPlan() = default;
  CompiledPlan(const CompiledPlan&) = delete;
  CompiledPlan& operator=(const CompiledPlan&) = delete;
  ~CompiledPlan();
};

// The policy an options struct asks for: defaults, then the file, then the string.
Policy load_policy(const sgtopk_compile_options& options);

std::unique_ptr<CompiledPlan> compile_plan(const sgtopk_problem* problem, const sgtopk_compile_options* options);

// What the cache key covers for this plan (exposed for tests and the CLI).
CacheKeyInputs cache_key_inputs(const Plan& plan, const GeneratedSource& source);

// Human-readable plan: problem, family, constants, geometry, cache, policy.
std::string describe_plan(const CompiledPlan& compiled);

}  // namespace sgtopk
