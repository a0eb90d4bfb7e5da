// sgtopk: the command-line tool.
//
//   sgtopk plan [problem options | PROBLEM.toml]   plan, compile (or hit the cache), print the plan
//   sgtopk prewarm MANIFEST.toml [--jobs N]          compile every plan of a deployment manifest into the cache
//   sgtopk env                                       environment variables, cache and driver status
//   sgtopk selftest [problem options]                on a GPU: compile, run, verify against the CPU reference, time
//   sgtopk simulate [--family NAME|all] [--causal]   CPU only: the sampled route's decisions over the row families
//
// It goes through the public C API for everything a user could do, and
// reaches into the library only for the CPU reference, the row families, the
// policy file and device memory.
#include <sgtopk/sgtopk.h>

#include <toml++/toml.h>

#include <algorithm>
#include <climits>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <fstream>
#include <vector>

#include "reference/row_families.h"
#include "reference/sampled_route.h"
#include "reference/select.h"
#include "runtime/cached_compile.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/knobs.h"
#include "runtime/policy.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: sgtopk <command> [options]\n"
               "  plan     [--k N] [--rows R] [--width W] [--pitch P] [--values] [--sorted] [--starts]\n"
               "           [--route-stats] [--arch sm_90 | --device D] [--policy FILE] [--family NAME]\n"
               "           [PROBLEM.toml]\n"
               "  prewarm  MANIFEST.toml [--jobs N] [--arch sm_90] [--policy FILE]\n"
               "  policy   [--policy FILE] [--out FILE]   the policy in effect as TOML (defaults without FILE)\n"
               "  env\n"
               "  selftest [--k N] [--rows R] [--width W] [--pitch P] [--values] [--sorted] [--starts]\n"
               "           [--route-stats] [--device D] [--policy FILE] [--family NAME]\n"
               "  simulate [--k N] [--rows R] [--width W] [--family NAME|all] [--policy FILE] [--causal]\n"
               "  version\n");
  return 2;
}

// One plan request: the problem plus how to compile it.
struct Request {
  std::string name = "cli";
  sgtopk_problem problem = SGTOPK_PROBLEM_INIT;
  std::string arch;
  int device = -1;
  std::string policy_file;
  std::string family;
};

bool parse_flag_list(const toml::array* flags, uint32_t* out, std::string* error) {
  if (!flags) return true;
  for (const auto& f : *flags) {
    auto v = f.value<std::string>();
    if (!v) return *error = "flags must be strings", false;
    if (*v == "values") *out |= SGTOPK_VALUES;
    else if (*v == "sorted") *out |= SGTOPK_SORTED;
    else if (*v == "starts") *out |= SGTOPK_STARTS;
    else if (*v == "route_stats") *out |= SGTOPK_ROUTE_STATS;
    else return *error = "unknown flag '" + *v + "' (known: values, sorted, starts, route_stats)", false;
  }
  return true;
}

// Reads a problem table: k, rows, width, optional pitch, out_pitch, flags, name.
bool request_from_table(const toml::table& t, Request* r, std::string* error) {
  static const char* known[] = {"name", "k", "rows", "width", "pitch", "out_pitch", "flags", "family"};
  for (const auto& entry : t) {
    const toml::key& key = entry.first;  // named, not a structured binding: lambdas capture it portably
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return key.str() == k; }) ==
        std::end(known))
      return *error = "unknown key '" + std::string(key.str()) + "'", false;
  }
  for (const char* key : {"k", "rows", "width", "pitch", "out_pitch"}) {
    if (t.contains(key) && !t[key].is_integer())
      return *error = std::string(key) + " must be an integer", false;
  }
  for (const char* key : {"name", "family"}) {
    if (t.contains(key) && !t[key].is_string()) return *error = std::string(key) + " must be a string", false;
  }
  const int64_t k = t["k"].value_or(int64_t{0});
  if (k < INT32_MIN || k > INT32_MAX) return *error = "k = " + std::to_string(k) + " does not fit in int32", false;
  r->name = t["name"].value_or(r->name);
  r->problem.k = static_cast<int32_t>(k);
  r->problem.rows = t["rows"].value_or(int64_t{0});
  r->problem.width = t["width"].value_or(int64_t{0});
  r->problem.pitch = t["pitch"].value_or(int64_t{0});
  r->problem.out_pitch = t["out_pitch"].value_or(int64_t{0});
  r->family = t["family"].value_or(std::string());
  return parse_flag_list(t["flags"].as_array(), &r->problem.flags, error);
}

// Parses --options; returns false (with a message) on a bad one. Positional
// arguments are collected in `positional`.
bool parse_options(int argc, char** argv, int first, Request* r, std::vector<std::string>* positional, int* jobs,
                   bool* causal = nullptr) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "sgtopk: %s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&](const char* what, bool int32 = false) -> int64_t {
      std::string v = value(what);
      try {
        size_t used = 0;
        int64_t n = std::stoll(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
        if (int32 && (n < INT32_MIN || n > INT32_MAX)) throw std::out_of_range(v);
        return n;
      } catch (...) {
        std::fprintf(stderr, "sgtopk: %s expects an integer%s, got '%s'\n", what, int32 ? " in int32 range" : "", v.c_str());
        std::exit(2);
      }
    };
    if (a == "--k") r->problem.k = static_cast<int32_t>(number("--k", true));
    else if (a == "--rows") r->problem.rows = number("--rows");
    else if (a == "--width") r->problem.width = number("--width");
    else if (a == "--pitch") r->problem.pitch = number("--pitch");
    else if (a == "--values") r->problem.flags |= SGTOPK_VALUES;
    else if (a == "--sorted") r->problem.flags |= SGTOPK_SORTED;
    else if (a == "--starts") r->problem.flags |= SGTOPK_STARTS;
    else if (a == "--route-stats") r->problem.flags |= SGTOPK_ROUTE_STATS;
    else if (a == "--arch") r->arch = value("--arch");
    else if (a == "--device") r->device = static_cast<int>(number("--device", true));
    else if (a == "--policy") r->policy_file = value("--policy");
    else if (a == "--family") r->family = value("--family");
    else if (a == "--jobs" && jobs) *jobs = static_cast<int>(number("--jobs", true));
    else if (a == "--causal" && causal) *causal = true;
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "sgtopk: unknown option %s\n", a.c_str());
      return false;
    } else positional->push_back(a);
  }
  return true;
}

sgtopk_compile_options options_for(const Request& r) {
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = r.device;
  o.arch = r.arch.empty() ? nullptr : r.arch.c_str();
  o.policy_file = r.policy_file.empty() ? nullptr : r.policy_file.c_str();
  o.family = r.family.empty() ? nullptr : r.family.c_str();
  return o;
}

int cmd_plan(int argc, char** argv) {
  Request r;
  r.problem.k = 2048;
  r.problem.rows = 4096;
  r.problem.width = 262144;
  std::vector<std::string> positional;
  if (!parse_options(argc, argv, 2, &r, &positional, nullptr)) return 2;
  if (positional.size() > 1) return usage();
  if (positional.size() == 1) {
    try {
      toml::table t = toml::parse_file(positional[0]);
      const toml::table* problem = t["problem"].as_table();
      std::string error;
      if (!request_from_table(problem ? *problem : t, &r, &error)) {
        std::fprintf(stderr, "sgtopk: %s: %s\n", positional[0].c_str(), error.c_str());
        return 2;
      }
    } catch (const toml::parse_error& e) {
      std::fprintf(stderr, "sgtopk: %s:%u: %s\n", positional[0].c_str(), e.source().begin.line,
                   std::string(e.description()).c_str());
      return 2;
    }
  }
  sgtopk_compile_options o = options_for(r);
  sgtopk_plan plan = nullptr;
  if (sgtopk_compile(&r.problem, &o, &plan) != SGTOPK_OK) {
    std::fprintf(stderr, "sgtopk: %s\n", sgtopk_last_error());
    return 1;
  }
  std::printf("%s", sgtopk_plan_text(plan));
  sgtopk_plan_destroy(plan);
  return 0;
}

int cmd_prewarm(int argc, char** argv) {
  Request defaults;
  std::vector<std::string> positional;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!parse_options(argc, argv, 2, &defaults, &positional, &jobs) || positional.size() != 1) return usage();
  const std::string manifest_path = positional[0];

  std::vector<Request> requests;
  try {
    toml::table manifest = toml::parse_file(manifest_path);
    for (const auto& [key, value] : manifest) {
      (void)value;
      if (key != "arch" && key != "policy" && key != "plan") {
        std::fprintf(stderr, "sgtopk: %s:%u: unknown key '%s' (known: arch, policy, [[plan]])\n", manifest_path.c_str(),
                     key.source().begin.line, std::string(key.str()).c_str());
        return 2;
      }
    }
    const std::filesystem::path base = std::filesystem::path(manifest_path).parent_path();
    std::string arch = manifest["arch"].value_or(std::string("sm_90"));
    if (!defaults.arch.empty()) arch = defaults.arch;
    std::string policy = defaults.policy_file;
    if (policy.empty()) {
      if (auto p = manifest["policy"].value<std::string>()) policy = (base / *p).string();
    }
    const toml::array* plans = manifest["plan"].as_array();
    if (!plans || plans->empty()) {
      std::fprintf(stderr, "sgtopk: %s: no [[plan]] entries\n", manifest_path.c_str());
      return 2;
    }
    int n = 0;
    for (const auto& node : *plans) {
      ++n;
      const toml::table* t = node.as_table();
      Request r;
      r.name = "plan " + std::to_string(n);
      r.arch = arch;
      r.policy_file = policy;
      std::string error;
      if (!t || !request_from_table(*t, &r, &error)) {
        std::fprintf(stderr, "sgtopk: %s: [[plan]] #%d: %s\n", manifest_path.c_str(), n,
                     t ? error.c_str() : "not a table");
        return 2;
      }
      requests.push_back(r);
    }
  } catch (const toml::parse_error& e) {
    std::fprintf(stderr, "sgtopk: %s:%u: %s\n", manifest_path.c_str(), e.source().begin.line,
                 std::string(e.description()).c_str());
    return 2;
  }

  std::printf("prewarm: %zu plans from %s, %d jobs, cache %s\n", requests.size(), manifest_path.c_str(), jobs,
              sgtopk::detail::global_kernel_cache().disk().enabled()
                  ? sgtopk::detail::global_kernel_cache().disk().dir().string().c_str()
                  : "(memory only)");
  std::atomic<size_t> next{0};
  std::atomic<int> hits{0}, compiled{0}, failed{0};
  std::mutex print;
  size_t done = 0;
  auto worker = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      const Request& r = requests[i];
      sgtopk_compile_options o = options_for(r);
      sgtopk_plan plan = nullptr;
      const auto begin = std::chrono::steady_clock::now();
      sgtopk_status status = sgtopk_compile(&r.problem, &o, &plan);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
      std::lock_guard<std::mutex> lock(print);
      ++done;
      if (status != SGTOPK_OK) {
        ++failed;
        std::printf("[%zu/%zu] %s: FAILED: %s\n", done, requests.size(), r.name.c_str(), sgtopk_last_error());
        continue;
      }
      sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
      sgtopk_plan_describe(plan, &info);
      const bool hit = info.from_cache != 0;
      (hit ? hits : compiled)++;
      std::printf("[%zu/%zu] %s: %s %s, key %s, %s (%.1f ms)\n", done, requests.size(), r.name.c_str(), info.family,
                  info.arch, info.cache_key, hit ? (info.from_cache == 2 ? "disk cache hit" : "memory cache hit") : "compiled",
                  ms);
      std::fflush(stdout);
      sgtopk_plan_destroy(plan);
    }
  };
  std::vector<std::thread> pool;
  for (int j = 0; j < std::max(1, jobs); ++j) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  std::printf("prewarm summary: %zu plans: %d cache hits, %d compiled, %d failed\n", requests.size(), hits.load(),
              compiled.load(), failed.load());
  return failed ? 1 : 0;
}

// The policy in effect (the compiled-in defaults, or FILE over them) as TOML:
// what a policy file may say, with every key's comment and range.
int cmd_policy(int argc, char** argv) {
  std::string policy_file, out_path;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--policy" || a == "--out") && i + 1 < argc) {
      (a == "--policy" ? policy_file : out_path) = argv[++i];
    } else {
      std::fprintf(stderr, "sgtopk policy: unknown option '%s'\n", a.c_str());
      return usage();
    }
  }
  try {
    const sgtopk::detail::Policy policy = policy_file.empty() ? sgtopk::detail::Policy::defaults()
                                                              : sgtopk::detail::parse_policy_file(policy_file);
    const std::string text = policy.to_toml();
    if (out_path.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : 1;
    }
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::fprintf(stderr, "sgtopk policy: cannot write %s\n", out_path.c_str());
      return 1;
    }
    return 0;
  } catch (const sgtopk::detail::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

int cmd_env() {
  std::printf("sgtopk %s\n\nenvironment variables:\n", sgtopk_version_string());
  for (const auto& k : sgtopk::detail::all_knobs()) {
    const char* v = std::getenv(k.name);
    std::printf("  %-26s = %-40s (default %s)\n      %s\n", k.name, v ? v : "(unset)", k.default_text, k.help);
  }
  const auto& kn = sgtopk::detail::knobs();
  std::printf("\neffective:\n  cache dir   %s%s\n  dump dir    %s\n  verbose     %d\n", kn.cache_dir.c_str(),
              kn.disable_disk_cache ? " (disabled)" : "", kn.dump_dir.c_str(), kn.verbose);
  std::string why;
  if (sgtopk::detail::driver_available(&why)) {
    int version = 0;
    sgtopk::detail::driver().cuDriverGetVersion(&version);
    std::printf("  driver      CUDA %d.%d\n", version / 1000, (version % 1000) / 10);
  } else {
    std::printf("  driver      %s\n", why.c_str());
  }
  return 0;
}

// --- selftest ---------------------------------------------------------------

struct DeviceMemory {
  CUdeviceptr ptr = 0;
  explicit DeviceMemory(size_t bytes) {
    sgtopk::detail::check_cuda(sgtopk::detail::driver().cuMemAlloc(&ptr, std::max<size_t>(bytes, 4)), "cuMemAlloc");
  }
  ~DeviceMemory() {
    if (ptr) sgtopk::detail::driver().cuMemFree(ptr);
  }
};

int cmd_selftest(int argc, char** argv) {
  Request r;
  r.problem.k = 2048;
  r.problem.rows = 512;
  r.problem.width = 131072;
  r.device = 0;
  std::vector<std::string> positional;
  if (!parse_options(argc, argv, 2, &r, &positional, nullptr) || !positional.empty()) return usage();
  std::string why;
  if (!sgtopk::detail::driver_available(&why)) {
    std::printf("selftest: skipped: %s\n", why.c_str());
    return 0;
  }
  try {
    const sgtopk::detail::DriverApi& cu = sgtopk::detail::driver();
    CUdevice dev;
    CUcontext ctx;
    sgtopk::detail::check_cuda(cu.cuDeviceGet(&dev, r.device), "cuDeviceGet");
    sgtopk::detail::check_cuda(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    sgtopk::detail::check_cuda(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

    sgtopk_compile_options o = options_for(r);
    o.own_workspace = 1;
    sgtopk_plan plan = nullptr;
    const auto begin = std::chrono::steady_clock::now();
    if (sgtopk_compile(&r.problem, &o, &plan) != SGTOPK_OK) {
      std::fprintf(stderr, "selftest: compile failed: %s\n", sgtopk_last_error());
      return 1;
    }
    const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
    sgtopk_plan_describe(plan, &info);

    // Causal ragged rows: row i has length width - rows + 1 + i (clamped);
    // with --starts, each row's window begins at a random (unaligned) offset.
    const int64_t rows = r.problem.rows, width = r.problem.width, k = r.problem.k;
    const bool values = (r.problem.flags & SGTOPK_VALUES) != 0, sorted = (r.problem.flags & SGTOPK_SORTED) != 0;
    const bool with_starts = (r.problem.flags & SGTOPK_STARTS) != 0;
    const bool route_stats = (r.problem.flags & SGTOPK_ROUTE_STATS) != 0;
    const int64_t pitch = r.problem.pitch ? r.problem.pitch : width;
    std::vector<float> scores(static_cast<size_t>(rows * pitch), std::nanf(""));
    std::vector<int32_t> lengths(static_cast<size_t>(rows)), starts(static_cast<size_t>(rows), 0);
    std::mt19937_64 rng(20261129);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t len = std::max<int64_t>(0, width - rows + 1 + i);
      lengths[static_cast<size_t>(i)] = static_cast<int32_t>(len);
      if (with_starts && pitch > len) starts[static_cast<size_t>(i)] = static_cast<int32_t>(rng() % static_cast<uint64_t>(pitch - len + 1));
      float* row = &scores[static_cast<size_t>(i * pitch + starts[static_cast<size_t>(i)])];
      for (int64_t j = 0; j < len; ++j) row[j] = std::max(0.0f, normal(rng));  // ReLU-like: many exact zeros
    }
    const size_t out_slots = static_cast<size_t>(rows * k);
    DeviceMemory d_scores(scores.size() * 4), d_len(lengths.size() * 4), d_starts(starts.size() * 4),
        d_idx(out_slots * 4), d_val(values ? out_slots * 4 : 4), d_stats(SGTOPK_ROUTE_STAT_SLOTS * 8);
    sgtopk::detail::check_cuda(cu.cuMemcpyHtoD(d_scores.ptr, scores.data(), scores.size() * 4), "cuMemcpyHtoD");
    sgtopk::detail::check_cuda(cu.cuMemcpyHtoD(d_len.ptr, lengths.data(), lengths.size() * 4), "cuMemcpyHtoD");
    sgtopk::detail::check_cuda(cu.cuMemcpyHtoD(d_starts.ptr, starts.data(), starts.size() * 4), "cuMemcpyHtoD");
    sgtopk::detail::check_cuda(cu.cuMemsetD32(d_idx.ptr, 0xdeadbeefu, out_slots), "cuMemsetD32");
    if (values) sgtopk::detail::check_cuda(cu.cuMemsetD32(d_val.ptr, 0xdeadbeefu, out_slots), "cuMemsetD32");
    sgtopk::detail::check_cuda(cu.cuMemsetD8(d_stats.ptr, 0, SGTOPK_ROUTE_STAT_SLOTS * 8), "cuMemsetD8");

    sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;
    args.scores = d_scores.ptr;
    args.lengths = d_len.ptr;
    args.starts = with_starts ? d_starts.ptr : 0;
    args.indices = d_idx.ptr;
    args.values = values ? d_val.ptr : 0;
    args.route_stats = route_stats ? d_stats.ptr : 0;
    if (sgtopk_select(plan, &args, nullptr) != SGTOPK_OK) {
      std::fprintf(stderr, "selftest: launch failed: %s\n", sgtopk_last_error());
      return 1;
    }
    sgtopk::detail::check_cuda(cu.cuCtxSynchronize(), "kernel");
    std::vector<int32_t> indices(out_slots);
    std::vector<float> value_out(values ? out_slots : 0);
    sgtopk::detail::check_cuda(cu.cuMemcpyDtoH(indices.data(), d_idx.ptr, indices.size() * 4), "cuMemcpyDtoH");
    if (values) sgtopk::detail::check_cuda(cu.cuMemcpyDtoH(value_out.data(), d_val.ptr, out_slots * 4), "cuMemcpyDtoH");
    int bad_rows = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const size_t first_slot = static_cast<size_t>(i * k);
      std::string problem = sgtopk::reference::check_select_row(
          &scores[static_cast<size_t>(i * pitch + starts[static_cast<size_t>(i)])], lengths[static_cast<size_t>(i)],
          static_cast<int>(k), &indices[first_slot], values ? &value_out[first_slot] : nullptr, sorted);
      if (!problem.empty() && bad_rows++ < 3) std::printf("selftest: row %lld: %s\n", static_cast<long long>(i), problem.c_str());
    }
    if (route_stats) {
      // The first launch's routes only: the graph replays below add to the same buffer.
      uint64_t stats[SGTOPK_ROUTE_STAT_SLOTS] = {};
      sgtopk::detail::check_cuda(cu.cuMemcpyDtoH(stats, d_stats.ptr, sizeof stats), "cuMemcpyDtoH");
      // Every slot, named by the library (the cycle slots too).
      std::printf("routes:");
      for (int slot = 0; slot < SGTOPK_ROUTE_STAT_SLOTS; ++slot)
        std::printf(" %s=%llu", sgtopk_route_stat_name(slot), static_cast<unsigned long long>(stats[slot]));
      std::printf("\n");
    }

    // Time graph replays with events.
    sgtopk_graph graph = nullptr;
    if (sgtopk_graph_create(plan, &args, &graph) != SGTOPK_OK) {
      std::fprintf(stderr, "selftest: graph failed: %s\n", sgtopk_last_error());
      return 1;
    }
    CUevent start, stop;
    cu.cuEventCreate(&start, 0);
    cu.cuEventCreate(&stop, 0);
    for (int i = 0; i < 5; ++i) sgtopk_graph_launch(graph, nullptr);
    const int reps = 50;
    cu.cuEventRecord(start, nullptr);
    for (int i = 0; i < reps; ++i) sgtopk_graph_launch(graph, nullptr);
    cu.cuEventRecord(stop, nullptr);
    sgtopk::detail::check_cuda(cu.cuEventSynchronize(stop), "graph replay");
    float total_ms = 0;
    cu.cuEventElapsedTime(&total_ms, start, stop);
    double bytes = 0;
    for (int32_t l : lengths) bytes += 4.0 * l;
    const double ms = total_ms / reps;
    std::printf("selftest: %s K=%lld rows=%lld width=%lld on %s: %s, %.3f ms per call (%.0f GB/s of valid scores), "
                "compile+load %.1f ms (%s)\n",
                info.family, static_cast<long long>(k), static_cast<long long>(rows), static_cast<long long>(width),
                info.arch, bad_rows == 0 ? "exact" : "WRONG", ms, bytes / (ms * 1e6), compile_ms,
                info.from_cache ? "from cache" : "compiled");
    sgtopk_graph_destroy(graph);
    sgtopk_plan_destroy(plan);
    cu.cuEventDestroy(start);
    cu.cuEventDestroy(stop);
    return bad_rows == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "selftest: %s\n", e.what());
    return 1;
  }
}


// --- simulate ---------------------------------------------------------------
//
// The sampled route's decisions (reference::decide_sampled_route) over rows of
// the library's row families, on the CPU: how often a row is certified by the
// primary proposal, needs the band pass, or falls back to the exact route, and
// how many candidates certification admits. It predicts the sampled family's
// traffic (ALGORITHM.md, table 2) before any kernel runs.

using sgtopk::reference::SampledDecision;

struct RouteTally {
  int64_t rows = 0, short_rows = 0, primary = 0, band = 0, exact = 0;  // exact includes no-view
  int64_t certified_admitted = 0;  // sum of the candidates of primary and band rows
  int stride_min = INT_MAX, stride_max = 0;

  void add(const SampledDecision& d) {
    ++rows;
    switch (d.route) {
      case SampledDecision::kShort: ++short_rows; return;  // no view, no stride: nothing is sampled
      case SampledDecision::kPrimary: ++primary; break;
      case SampledDecision::kBand: ++band; break;
      case SampledDecision::kNoView:
      case SampledDecision::kExact: ++exact; break;
    }
    certified_admitted += d.admitted();
    stride_min = std::min(stride_min, d.stride);
    stride_max = std::max(stride_max, d.stride);
  }
  void merge(const RouteTally& o) {
    rows += o.rows;
    short_rows += o.short_rows;
    primary += o.primary;
    band += o.band;
    exact += o.exact;
    certified_admitted += o.certified_admitted;
    stride_min = std::min(stride_min, o.stride_min);
    stride_max = std::max(stride_max, o.stride_max);
  }
};

void print_tally(const char* name, const RouteTally& t, int k) {
  auto pct = [&](int64_t n) { return t.rows ? 100.0 * static_cast<double>(n) / static_cast<double>(t.rows) : 0.0; };
  const int64_t certified = t.primary + t.band;
  char admitted[32] = "-";
  if (certified > 0) {
    std::snprintf(admitted, sizeof admitted, "%.2f",
                  static_cast<double>(t.certified_admitted) / static_cast<double>(certified) / k);
  }
  char stride[32] = "-";
  if (t.stride_max > 0) {
    if (t.stride_min == t.stride_max) std::snprintf(stride, sizeof stride, "%d", t.stride_max);
    else std::snprintf(stride, sizeof stride, "%d/%d", t.stride_min, t.stride_max);
  }
  std::printf("%-20s %6lld %8.1f %6.1f %6.1f %6.1f %11s %7s\n", name, static_cast<long long>(t.rows), pct(t.primary),
              pct(t.band), pct(t.exact), pct(t.short_rows), admitted, stride);
}

int cmd_simulate(int argc, char** argv) {
  Request r;
  r.problem.k = 2048;
  r.problem.rows = 256;
  r.problem.width = 262144;
  bool causal = false;
  std::vector<std::string> positional;
  if (!parse_options(argc, argv, 2, &r, &positional, nullptr, &causal) || !positional.empty()) return usage();
  const int k = r.problem.k;
  const int64_t rows = r.problem.rows, width = r.problem.width;
  if (k < 1 || rows < 1 || width < 1) {
    std::fprintf(stderr, "sgtopk: simulate needs --k, --rows and --width of at least 1\n");
    return 2;
  }

  namespace rf = sgtopk::rows;
  std::vector<rf::RowFamily> families;
  const std::string family = r.family.empty() ? "indexer_like" : r.family;
  if (family == "all") {
    families = rf::all_row_families();
  } else if (auto f = rf::family_from_name(family)) {
    families.push_back(*f);
  } else {
    std::string known;
    for (rf::RowFamily g : rf::all_row_families()) known += std::string(rf::family_name(g)) + ", ";
    std::fprintf(stderr, "sgtopk: unknown row family '%s' (known: %sall)\n", family.c_str(), known.c_str());
    return 2;
  }

  sgtopk::detail::Policy policy = sgtopk::detail::Policy::defaults();
  if (!r.policy_file.empty()) {
    try {
      policy = sgtopk::detail::parse_policy_file(r.policy_file);
    } catch (const sgtopk::detail::Error& e) {
      std::fprintf(stderr, "sgtopk: %s\n", e.what());
      return 2;
    }
  }
  const sgtopk::detail::SelectSampledPolicy& sp = policy.sampled;

  // Row i of a causal batch (prefill) sees width - rows + 1 + i keys.
  auto length_of = [&](int64_t i) { return causal ? std::max<int64_t>(0, width - rows + 1 + i) : width; };
  std::printf("simulate: K=%d, %lld %s of length %lld..%lld; stride %d for rows >= %lld wide, else %d; "
              "margins %.3g (primary) / %.3g (band)\n",
              k, static_cast<long long>(rows), causal ? "causal rows" : "rows", static_cast<long long>(length_of(0)),
              static_cast<long long>(length_of(rows - 1)), sp.stride_wide, static_cast<long long>(sp.wide_row_threshold),
              sp.stride_narrow, sp.primary_margin, sp.secondary_margin);

  // Each (family, row) gets its own seed, from the family's identity and the
  // row index, so a family's rows are the same alone or within `all`.
  auto seed_of = [](rf::RowFamily f, int64_t i) {
    return 0x5eed2026c0ffee11ull ^ (static_cast<uint64_t>(f) + 1) * 0x9E3779B97F4A7C15ull ^
           static_cast<uint64_t>(i) * 0xBF58476D1CE4E5B9ull;
  };
  const size_t tasks = families.size() * static_cast<size_t>(rows);
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), tasks);
  std::vector<std::vector<RouteTally>> partial(threads, std::vector<RouteTally>(families.size()));
  std::atomic<size_t> next{0};
  auto worker = [&](size_t t) {
    for (size_t task = next++; task < tasks; task = next++) {
      const size_t fi = task / static_cast<size_t>(rows);
      const int64_t i = static_cast<int64_t>(task % static_cast<size_t>(rows));
      std::mt19937_64 rng(seed_of(families[fi], i));
      const int64_t len = length_of(i);
      const std::vector<float> row = rf::make_row(families[fi], len, k, rng);
      // The row id is the row's index in the launch, as on the GPU.
      partial[t][fi].add(sgtopk::reference::decide_sampled_route(row.data(), len, k, static_cast<uint64_t>(i), sp));
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();

  std::printf("%-20s %6s %8s %6s %6s %6s %11s %7s\n", "family", "rows", "primary%", "band%", "exact%", "short%",
              "admitted/K", "stride");
  RouteTally total;
  for (size_t fi = 0; fi < families.size(); ++fi) {
    RouteTally t;
    for (const auto& p : partial) t.merge(p[fi]);
    print_tally(rf::family_name(families[fi]), t, k);
    total.merge(t);
  }
  if (families.size() > 1) print_tally("all", total, k);
  std::printf("exact%% includes rows whose view is too small (no view); short: len <= K, nothing to select; "
              "admitted/K: mean candidates over the certified (primary + band) rows.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string command = argv[1];
  if (command == "plan") return cmd_plan(argc, argv);
  if (command == "prewarm") return cmd_prewarm(argc, argv);
  if (command == "policy") return cmd_policy(argc, argv);
  if (command == "env") return cmd_env();
  if (command == "selftest") return cmd_selftest(argc, argv);
  if (command == "simulate") return cmd_simulate(argc, argv);
  if (command == "version" || command == "--version") {
    std::printf("sgtopk %s\n", sgtopk_version_string());
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    usage();
    return 0;
  }
  std::fprintf(stderr, "sgtopk: unknown command '%s'\n", command.c_str());
  return usage();
}
