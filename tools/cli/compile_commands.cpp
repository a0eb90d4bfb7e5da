// The subcommands that plan and compile without a GPU: plan, prewarm, policy,
// env.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include "cache/kernel_cache.h"
#include "runtime/cached_compile.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/knobs.h"
#include "runtime/policy.h"
#include "tools/cli/commands.h"
#include "tools/cli/config_files.h"

namespace sgtopk::cli {
namespace {

// The compile options every compiling subcommand takes, in the "Compile" group.
void add_compile_options(CLI::App* app, Request* r, bool arch_or_device) {
  const std::string group = "Compile";
  if (arch_or_device) {
    app->add_option("--arch", r->arch, "target architecture, e.g. sm_90 (no GPU needed); not with --device")
        ->type_name("ARCH")
        ->group(group);
    app->add_option("--device", r->device, "target (and load on) this CUDA device; not with --arch")
        ->type_name("N")
        ->transform(integer_in(0, 1023, "device"))
        ->group(group);
  }
  app->add_option("--policy", r->policy_file, "policy TOML over the defaults (see `sgtopk policy`)")
      ->type_name("FILE")
      ->group(group);
  app->add_option("--family", r->family, "force a kernel family: direct_exact, sampled, split, short_row or cluster")
      ->type_name("NAME")
      ->group(group);
}

// A parse error in a file the user gave is a usage error.
template <typename F>
auto parsed(F&& parse) {
  try {
    return parse();
  } catch (const detail::Error& e) {
    throw UsageError(e.what());
  }
}

// --- plan -------------------------------------------------------------------

struct PlanCommand {
  ProblemOptions problem;
  Request request;
  std::string problem_file;
  bool filter = false;  // the filter operator: rows the batch, width the vocabulary, no K
  std::string dtype;    // --dtype: f32, bf16 or f16 (the library refuses bf16 / f16 for select)
  int candidates = 0;   // --candidates K: the filter's candidate output, K a row
  bool sample = false;  // --sample: the filter's sampled token
  bool no_mask = false; // --no-mask: the filter's other outputs alone

  int run() {
    Request r = request;
    if (!r.arch.empty() && r.device >= 0) throw UsageError("--arch and --device exclude each other: give one");
    sgtopk_problem& p = r.problem;
    if (problem_file.empty()) {
      p.k = 2048;
      p.rows = 4096;
      p.width = 262144;
    } else {
      // The file first, then every option given on the command line over it.
      const ProblemSpec spec = parsed([&] { return parse_problem_toml(read_config_file(problem_file), problem_file); });
      p.k = spec.k.value_or(0);
      p.rows = spec.rows.value_or(0);
      p.width = spec.width.value_or(0);
      p.pitch = spec.pitch.value_or(0);
      p.out_pitch = spec.out_pitch.value_or(0);
      p.flags = spec.flags | (spec.page_size ? SGTOPK_PAGE_TABLE : 0u);
      p.page_size = static_cast<int32_t>(spec.page_size.value_or(0));
      p.page_table_pitch = spec.page_table_pitch.value_or(0);
      if (r.family.empty() && spec.family) r.family = *spec.family;
      if (spec.name) r.name = *spec.name;
      for (const auto& [key, present, option] :
           {std::tuple<const char*, bool, const CLI::Option*>{"k", spec.k.has_value(), problem.k_opt},
            {"rows", spec.rows.has_value(), problem.rows_opt},
            {"width", spec.width.has_value(), problem.width_opt}}) {
        if (filter && std::string(key) == "k") continue;
        if (!present && option->count() == 0)
          throw UsageError(problem_file + ": no " + key + ": write `" + key + " = N` in it, or give --" + key);
      }
    }
    if (filter && problem_file.empty()) p.k = 0;  // the mask output (K is the candidate capacity)
    problem.apply(&p);
    if (filter) p.op = SGTOPK_OP_FILTER;
    if (!filter && (candidates != 0 || sample || no_mask))
      throw UsageError("--candidates, --sample and --no-mask are the filter's outputs: give --filter");
    if (filter && (candidates != 0 || sample || no_mask)) {
      p.flags = (no_mask ? 0u : SGTOPK_FILTER_MASK) | (candidates != 0 ? SGTOPK_FILTER_CANDIDATES : 0u) |
                (sample ? SGTOPK_FILTER_SAMPLE : 0u);
      if (p.flags == 0u) throw UsageError("--no-mask leaves the filter no output: add --candidates K or --sample");
      p.k = candidates;
    }
    if (!dtype.empty()) p.dtype = dtype == "bf16" ? SGTOPK_BF16 : dtype == "f16" ? SGTOPK_F16 : SGTOPK_F32;
    const sgtopk_compile_options o = options_for(r);
    sgtopk_plan plan = nullptr;
    if (sgtopk_compile(&p, &o, &plan) != SGTOPK_OK) {
      std::fprintf(stderr, "sgtopk plan: %s\n", sgtopk_last_error());
      return kExitFailure;
    }
    std::printf("%s", sgtopk_plan_text(plan));
    sgtopk_plan_destroy(plan);
    return 0;
  }
};

// --- prewarm ----------------------------------------------------------------

constexpr int kMaxJobs = 256;

struct PrewarmCommand {
  std::string manifest_path;
  int jobs = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxJobs);
  std::string arch, policy;
  bool allow_memory_only = false;

  int run() {
    const Manifest manifest = parsed([&] { return parse_manifest_toml(read_config_file(manifest_path), manifest_path); });
    const std::filesystem::path base = std::filesystem::path(manifest_path).parent_path();
    // --arch replaces the manifest's list; a plan is compiled for each arch.
    const std::vector<std::string> archs =
        !arch.empty() ? std::vector<std::string>{arch}
                      : manifest.archs.empty() ? std::vector<std::string>{"sm_90"} : manifest.archs;
    const std::string plan_policy = !policy.empty() ? policy : manifest.policy ? (base / *manifest.policy).string() : "";
    std::vector<Request> requests;
    for (const std::string& plan_arch : archs)
    for (size_t i = 0; i < manifest.plans.size(); ++i) {
      const ProblemSpec& spec = manifest.plans[i];
      Request r;
      r.name = spec.name.value_or("plan " + std::to_string(i + 1)) + (archs.size() > 1 ? " @" + plan_arch : "");
      r.arch = plan_arch;
      r.policy_file = plan_policy;
      r.family = spec.family.value_or("");
      r.problem.k = spec.k.value_or(0);
      r.problem.rows = spec.rows.value_or(0);
      r.problem.width = spec.width.value_or(0);
      r.problem.pitch = spec.pitch.value_or(0);
      r.problem.out_pitch = spec.out_pitch.value_or(0);
      r.problem.flags = spec.flags | (spec.page_size ? SGTOPK_PAGE_TABLE : 0u);
      r.problem.page_size = static_cast<int32_t>(spec.page_size.value_or(0));
      r.problem.page_table_pitch = spec.page_table_pitch.value_or(0);
      requests.push_back(std::move(r));
    }

    const detail::DiskCache& disk = detail::global_kernel_cache().disk();
    const std::string cache_text = !disk.enabled()    ? std::string("(memory only: the disk cache is off)")
                                   : !disk.writable() ? disk.dir().string() + " (read-only)"
                                                      : disk.dir().string();
    const size_t threads = std::min(static_cast<size_t>(jobs), requests.size());
    std::printf("prewarm: %zu plans from %s, %zu jobs, cache %s\n", requests.size(), manifest_path.c_str(), threads,
                cache_text.c_str());
    std::fflush(stdout);

    std::atomic<size_t> next{0};
    int hits = 0, compiled = 0, failed = 0;
    std::vector<std::string> not_stored;
    std::mutex print;
    size_t done = 0;
    std::exception_ptr error;  // the first one a worker met (out of memory): rethrown below
    auto compile_plans = [&] {
      for (size_t i = next++; i < requests.size(); i = next++) {
        const Request& r = requests[i];
        const sgtopk_compile_options o = options_for(r);
        sgtopk_plan plan = nullptr;
        const auto begin = std::chrono::steady_clock::now();
        const sgtopk_status status = sgtopk_compile(&r.problem, &o, &plan);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
        std::lock_guard<std::mutex> lock(print);
        ++done;
        if (status != SGTOPK_OK) {
          ++failed;
          std::printf("[%zu/%zu] %s: FAILED: %s\n", done, requests.size(), r.name.c_str(), sgtopk_last_error());
          std::fflush(stdout);
          continue;
        }
        sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
        sgtopk_plan_describe(plan, &info);
        const bool hit = info.from_cache != 0;
        ++(hit ? hits : compiled);
        if (!info.on_disk) not_stored.push_back(r.name);
        std::printf("[%zu/%zu] %s: %s %s, key %s, %s, %s (%.1f ms)\n", done, requests.size(), r.name.c_str(),
                    info.family, info.arch, info.cache_key,
                    hit ? (info.from_cache == 2 ? "disk cache hit" : "memory cache hit") : "compiled",
                    info.on_disk ? "on disk" : "NOT STORED", ms);
        std::fflush(stdout);
        sgtopk_plan_destroy(plan);
      }
    };
    auto worker = [&] {
      try {
        compile_plans();
      } catch (...) {
        next = requests.size();  // the others stop too
        std::lock_guard<std::mutex> lock(print);
        if (!error) error = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    try {
      for (size_t j = 0; j < threads; ++j) pool.emplace_back(worker);
    } catch (const std::system_error& e) {
      // Fewer threads than asked: those started do the work.
      std::fprintf(stderr, "sgtopk prewarm: warning: started %zu of %zu jobs: %s\n", pool.size(), threads, e.what());
    }
    if (pool.empty()) worker();
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);

    std::printf("prewarm summary: %zu plans: %d cache hits, %d compiled, %d failed, %zu not stored\n", requests.size(),
                hits, compiled, failed, not_stored.size());
    if (!not_stored.empty()) {
      std::sort(not_stored.begin(), not_stored.end());
      std::string names;
      for (const std::string& n : not_stored) names += (names.empty() ? "" : ", ") + n;
      const char* why = !disk.enabled()    ? "the disk cache is off"
                        : !disk.writable() ? "the cache directory is read-only"
                                           : "storing the entry failed";
      std::fprintf(stderr, "sgtopk prewarm: %s %zu plan(s) not stored (%s): %s\n",
                   allow_memory_only ? "note:" : "error:", not_stored.size(), why, names.c_str());
      if (!allow_memory_only)
        std::fprintf(stderr, "sgtopk prewarm: the disk cache is incomplete; --allow-memory-only accepts a run "
                             "that stores nothing\n");
    }
    if (failed) return kExitFailure;
    return !not_stored.empty() && !allow_memory_only ? kExitFailure : 0;
  }
};

// --- policy -----------------------------------------------------------------

struct PolicyCommand {
  std::string policy_file, out_path;

  int run() {
    detail::Policy policy = detail::Policy::defaults();
    try {
      if (!policy_file.empty()) policy = detail::parse_policy_file(policy_file);
    } catch (const detail::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return kExitFailure;
    }
    const std::string text = policy.to_toml();
    if (out_path.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;  // main reports a failed write
    }
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::fprintf(stderr, "sgtopk policy: cannot write %s\n", out_path.c_str());
      return kExitFailure;
    }
    return 0;
  }
};

int run_env() {
  std::printf("sgtopk %s\n\nenvironment variables:\n", sgtopk_version_string());
  for (const auto& k : detail::all_knobs()) {
    const char* v = std::getenv(k.name);
    std::printf("  %-26s = %-40s (default %s)\n      %s\n", k.name, v ? v : "(unset)", k.default_text, k.help);
  }
  const auto& kn = detail::knobs();
  std::printf("\neffective:\n  cache dir   %s%s\n  dump dir    %s\n  verbose     %d\n", kn.cache_dir.c_str(),
              kn.disable_disk_cache ? " (disabled)" : "", kn.dump_dir.c_str(), kn.verbose);
  std::string why;
  if (detail::driver_available(&why)) {
    int version = 0;
    detail::driver().cuDriverGetVersion(&version);
    std::printf("  driver      CUDA %d.%d\n", version / 1000, (version % 1000) / 10);
  } else {
    std::printf("  driver      %s\n", why.c_str());
  }
  return 0;
}

}  // namespace

Runner add_plan(CLI::App& app) {
  auto cmd = std::make_shared<PlanCommand>();
  CLI::App* sub = app.add_subcommand("plan", "Plan, compile (or hit the cache) and print the plan");
  cmd->problem.add(sub, ProblemOptions::Set::all, 2048, 4096, 262144);
  add_compile_options(sub, &cmd->request, true);
  sub->add_flag("--filter", cmd->filter,
                "plan the top-k / top-p filter (mask output) instead of select: --rows is the batch, --width the "
                "vocabulary; no --k")
      ->group("Problem");
  sub->add_option("--candidates", cmd->candidates,
                  "the filter's candidate output: the kept tokens in order, at most K a row, and the kept count")
      ->check(CLI::PositiveNumber)
      ->group("Problem");
  sub->add_flag("--sample", cmd->sample, "the filter's sampled token, one a row")->group("Problem");
  sub->add_flag("--no-mask", cmd->no_mask, "the filter without its mask output (with --candidates or --sample)")
      ->group("Problem");
  sub->add_option("--dtype", cmd->dtype, "the logits' element type: f32 (the default), bf16 or f16 (the filter's)")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->group("Problem");
  sub->add_option("PROBLEM.toml", cmd->problem_file,
                  "a [problem] table (or its keys at the top level): k, rows, width, pitch, out_pitch, flags, "
                  "family; options given on the command line override its keys")
      ->type_name("");
  return [cmd] { return cmd->run(); };
}

Runner add_prewarm(CLI::App& app) {
  auto cmd = std::make_shared<PrewarmCommand>();
  CLI::App* sub =
      app.add_subcommand("prewarm", "Compile a deployment manifest's plans into the disk cache (no GPU needed)");
  sub->footer(
      "Prints a line per plan (a cache hit or compiled; on disk or NOT STORED), then\n"
      "  prewarm summary: N plans: H cache hits, C compiled, F failed, S not stored\n"
      "and exits 1 when a plan failed, or when a plan is not stored in the disk cache (it is off, read-only or a\n"
      "store failed) unless --allow-memory-only is given.");
  sub->add_option("MANIFEST.toml", cmd->manifest_path,
                  "arch, policy (relative to the manifest), then [[plan]] tables: name, k, rows, width, pitch, "
                  "out_pitch, flags, family")
      ->type_name("")
      ->required();
  sub->add_option("--jobs", cmd->jobs, "plans compiled at once, 1.." + std::to_string(kMaxJobs) +
                                           " (default: the number of CPUs)")
      ->type_name("N")
      ->transform(integer_in(1, kMaxJobs, "jobs"));
  sub->add_option("--arch", cmd->arch, "target architecture, over the manifest's `arch` (default sm_90)")
      ->type_name("ARCH");
  sub->add_option("--policy", cmd->policy, "policy TOML, over the manifest's `policy`")->type_name("FILE");
  sub->add_flag("--allow-memory-only", cmd->allow_memory_only,
                "exit 0 even when plans are not stored in the disk cache (disabled, read-only or failing): a "
                "check that every plan compiles");
  return [cmd] { return cmd->run(); };
}

Runner add_policy(CLI::App& app) {
  auto cmd = std::make_shared<PolicyCommand>();
  CLI::App* sub = app.add_subcommand("policy", "Print the policy in effect as TOML: every key, its range and comment");
  sub->add_option("--policy", cmd->policy_file, "a policy file over the defaults (default: the defaults alone)")
      ->type_name("FILE");
  sub->add_option("--out", cmd->out_path, "write it to FILE instead of standard output")->type_name("FILE");
  return [cmd] { return cmd->run(); };
}

Runner add_env(CLI::App& app) {
  app.add_subcommand("env", "Print the environment variables, the cache directory and the driver status");
  return [] { return run_env(); };
}

}  // namespace sgtopk::cli
