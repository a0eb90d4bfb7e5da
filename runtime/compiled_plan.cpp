#include "runtime/compiled_plan.h"

#include <sstream>

#include "runtime/cached_compile.h"
#include "runtime/codegen.h"
#include "runtime/compile_request.h"
#include "runtime/error.h"

namespace sgtopk::detail {

CompiledPlan::~CompiledPlan() {
  // The workspace and the module before the context they live in.
  own_workspace = DeviceWorkspace();
  kernel.reset();
  try {
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

namespace {

sgtopk_compile_options checked_options(const sgtopk_compile_options* options_in) {
  sgtopk_compile_options options = SGTOPK_COMPILE_OPTIONS_INIT;
  if (options_in != nullptr) {
    if (options_in->struct_size < sizeof(sgtopk_compile_options))
      invalid_argument("options.struct_size is " + std::to_string(options_in->struct_size) + ", expected " +
                       std::to_string(sizeof(sgtopk_compile_options)) + ": initialize it with SGTOPK_COMPILE_OPTIONS_INIT");
    options = *options_in;
  }
  if (options.device < 0 && options.own_workspace)
    invalid_argument("own_workspace needs a device: set options.device to a CUDA device ordinal");
  return options;
}

}  // namespace

std::unique_ptr<CompiledPlan> compile_plan(const sgtopk_problem* problem_in, const sgtopk_compile_options* options_in) {
  const Problem problem = validate_problem(problem_in);
  const sgtopk_compile_options options = checked_options(options_in);
  const Policy policy = load_policy(options);

  auto compiled = std::make_unique<CompiledPlan>();
  compiled->target = resolve_target(options.device, options.arch, policy.compile.default_arch);
  compiled->plan = make_plan(problem, policy, compiled->target, options.family ? options.family : "");
  const Plan& plan = compiled->plan;

  const CompileRequest request = make_compile_request(generate_source(plan), plan.arch, policy.compile);
  const CachedBinary binary = get_or_compile(request, plan.family);
  compiled->key = request.key;
  compiled->cubin = binary.cubin;
  compiled->source = binary.source;
  compiled->compile_ms = binary.compile_ms;
  compiled->on_disk = binary.on_disk;

  if (compiled->target.device >= 0) {
    compiled->kernel = load_kernel(compiled->target.context, request.key.hex(), *compiled->cubin,
                                   {plan.entry, plan.dynamic_smem_bytes},
                                   {plan.second.entry, plan.second.dynamic_smem_bytes});
    if (options.own_workspace && plan.workspace_bytes > 0)
      compiled->own_workspace = DeviceWorkspace(compiled->target.context, plan.workspace_bytes);
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
    << "because:   " << p.reason << "\n"
    << "target:    " << p.arch << (c.target.device >= 0 ? " on device " + std::to_string(c.target.device) + " (" + c.target.device_name + ")" : " (compile-only)")
    << ", " << c.target.sm_count << " SMs\n"
    << "launch:    grid " << p.grid << " x block " << p.block
    << (p.cluster > 1 ? " in clusters of " + std::to_string(p.cluster) : std::string()) << ", dynamic shared "
    << p.dynamic_smem_bytes << " B"
    << (p.launches > 1 && p.second.entry.empty() ? ", " + std::to_string(p.launches) + " launches a call where a row may take top-p alone, else one (a graph chains as many nodes)" : std::string())
    << "\n";
  if (!p.second.entry.empty())
    s << "second:    " << p.second.entry << ": grid " << p.second.grid << " x block " << p.second.block
      << ", dynamic shared " << p.second.dynamic_smem_bytes
      << " B; its rows only, after the first's (each launched where the scalars leave it rows; a graph chains both)\n";
  s
    << "workspace: " << p.workspace_bytes << " B\n"
    << "cache key: " << c.key.hex() << " (" << source_names[static_cast<int>(c.source)] << ")\n"
    << "on disk:   " << (c.on_disk ? "yes" : "no (the disk cache is off or read-only, or the store failed)") << "\n"
    << "compile:   " << c.compile_ms << " ms" << (c.kernel ? ", load " + std::to_string(c.kernel->load_ms) + " ms" : "") << "\n"
    ;
  for (const std::string& line : p.derived) s << "derived:   " << line << "\n";
  s << "constants:\n";
  for (const auto& [name, value] : p.config.entries())
    s << "  " << name << " = " << KernelConfig::value_text(value) << "\n";
  if (!p.second.entry.empty()) {
    s << "second constants:\n";
    for (const auto& [name, value] : p.second.config.entries())
      s << "  " << name << " = " << KernelConfig::value_text(value) << "\n";
  }
  s << "policy:\n" << p.policy.to_toml();
  return s.str();
}

}  // namespace sgtopk::detail
