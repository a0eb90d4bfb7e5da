#include "runtime/compiled_plan.h"

#include <sstream>

#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/log.h"
#include "runtime/nvrtc_compiler.h"

#ifndef SGTOPK_VERSION_TEXT
#define SGTOPK_VERSION_TEXT "0.0.0"
#endif

namespace sgtopk {

CompiledPlan::~CompiledPlan() {
  try {
    if (own_workspace != 0) {
      ScopedContext scope(target.context);
      driver().cuMemFree(own_workspace);
    }
    kernel.reset();
    release_target(target);
  } catch (...) {
    // Never throw from a destructor; the process may be exiting.
  }
}

Policy load_policy(const sgtopk_compile_options& options) {
  Policy policy = Policy::defaults();
  if (options.policy_file != nullptr) policy = parse_policy_file(options.policy_file, policy);
  if (options.policy_toml != nullptr) policy = parse_policy_string(options.policy_toml, "<policy_toml>", policy);
  return policy;
}

CacheKeyInputs cache_key_inputs(const Plan& plan, const GeneratedSource& source) {
  CacheKeyInputs inputs;
  inputs.source = source.text;
  inputs.headers = source.headers;
  inputs.options = nvrtc_options(plan);
  inputs.target = plan.arch;
  inputs.nvrtc_version = nvrtc_version();
  inputs.library_version = SGTOPK_VERSION_TEXT;
  return inputs;
}

std::unique_ptr<CompiledPlan> compile_plan(const sgtopk_problem* problem_in, const sgtopk_compile_options* options_in) {
  const Problem problem = validate_problem(problem_in);
  sgtopk_compile_options options = SGTOPK_COMPILE_OPTIONS_INIT;
  if (options_in != nullptr) {
    if (options_in->struct_size < sizeof(sgtopk_compile_options))
      invalid_argument("options.struct_size is " + std::to_string(options_in->struct_size) + ", expected " +
                       std::to_string(sizeof(sgtopk_compile_options)) + ": initialize it with SGTOPK_COMPILE_OPTIONS_INIT");
    options = *options_in;
  }
  if (options.device < 0 && options.own_workspace)
    invalid_argument("own_workspace needs a device: set options.device to a CUDA device ordinal");
  const Policy policy = load_policy(options);

  auto compiled = std::make_unique<CompiledPlan>();
  compiled->target = resolve_target(options.device, options.arch, policy.compile.default_arch);
  compiled->plan = make_plan(problem, policy, compiled->target, options.family ? options.family : "");
  const Plan& plan = compiled->plan;

  const GeneratedSource source = generate_source(plan);
  const CacheKeyInputs inputs = cache_key_inputs(plan, source);
  compiled->key = make_cache_key(inputs);
  const std::string manifest = make_manifest(inputs);
  const std::string tag = plan.family + "-" + compiled->key.hex();
  CachedBinary binary = global_kernel_cache().get_or_compile(compiled->key, manifest, [&] {
    log_info("compiling " + plan.family + " for " + plan.arch + " (key " + compiled->key.hex() + ")");
    return compile_cubin(source, inputs.options, plan.arch, tag);
  });
  compiled->cubin = binary.cubin;
  compiled->source = binary.source;
  compiled->compile_ms = binary.compile_ms;

  if (compiled->target.device >= 0) {
    compiled->kernel = load_kernel(compiled->target.context, compiled->key.hex(), *compiled->cubin, plan.entry,
                                   plan.dynamic_smem_bytes);
    if (options.own_workspace && plan.workspace_bytes > 0) {
      ScopedContext scope(compiled->target.context);
      CUdeviceptr ptr = 0;
      check_cuda(driver().cuMemAlloc(&ptr, plan.workspace_bytes), "cuMemAlloc(workspace)");
      compiled->own_workspace = ptr;
      // Kernels keep their row counters there and leave them zeroed. The
      // zero fill runs on a private non-blocking stream and only it is
      // waited for: not the caller's work on the legacy stream or the
      // context (workspace sizes are whole 8-byte frontier entries).
      const DriverApi& cu = driver();
      CUstream fill = nullptr;
      static_assert(kRowClaimsBytes % 8u == 0u, "workspace sizes stay whole words");
      check_cuda(cu.cuStreamCreate(&fill, CU_STREAM_NON_BLOCKING), "cuStreamCreate(workspace)");
      const CUresult set = plan.workspace_bytes % 4u == 0u
                               ? cu.cuMemsetD32Async(ptr, 0u, plan.workspace_bytes / 4u, fill)
                               : cu.cuMemsetD8Async(ptr, 0u, plan.workspace_bytes, fill);
      const CUresult done = set == CUDA_SUCCESS ? cu.cuStreamSynchronize(fill) : set;
      cu.cuStreamDestroy(fill);
      check_cuda(done, "zero-filling the workspace");
    }
  }
  compiled->text = describe_plan(*compiled);
  return compiled;
}

std::string describe_plan(const CompiledPlan& c) {
  const Plan& p = c.plan;
  std::ostringstream s;
  const char* source_names[] = {"compiled now", "memory cache", "disk cache"};
  s << "problem:   " << to_string(p.problem) << "\n"
    << "family:    " << p.family << " (" << p.agent_header << ", entry " << p.entry << ")\n"
    << "target:    " << p.arch << (c.target.device >= 0 ? " on device " + std::to_string(c.target.device) + " (" + c.target.device_name + ")" : " (compile-only)")
    << ", " << c.target.sm_count << " SMs\n"
    << "launch:    grid " << p.grid << " x block " << p.block << ", dynamic shared " << p.dynamic_smem_bytes << " B\n"
    << "workspace: " << p.workspace_bytes << " B\n"
    << "cache key: " << c.key.hex() << " (" << source_names[static_cast<int>(c.source)] << ")\n"
    << "compile:   " << c.compile_ms << " ms" << (c.kernel ? ", load " + std::to_string(c.kernel->load_ms) + " ms" : "") << "\n"
    << "constants:\n";
  for (const auto& [name, value] : p.constants) s << "  " << name << " = " << value << "\n";
  s << "policy:\n" << p.policy.to_toml();
  return s.str();
}

}  // namespace sgtopk
