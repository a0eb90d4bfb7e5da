// sgtopk selftest: on a GPU, compile a plan, run it on causal ragged rows,
// verify every row against the CPU reference, and time CUDA-graph replays.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "reference/select.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "tools/cli/commands.h"

namespace sgtopk::cli {
namespace {

// Host and device memory a selftest may ask for: rows x pitch scores and
// rows x K output slots, each at most 2^33 (32 GiB of floats).
constexpr int64_t kMaxSelftestElements = int64_t{1} << 33;

struct DeviceMemory {
  CUdeviceptr ptr = 0;
  explicit DeviceMemory(size_t bytes) {
    detail::check_cuda(detail::driver().cuMemAlloc(&ptr, std::max<size_t>(bytes, 4)), "cuMemAlloc");
  }
  ~DeviceMemory() {
    if (ptr) detail::driver().cuMemFree(ptr);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

struct SelftestCommand {
  ProblemOptions problem;
  Request request;

  int run() {
    Request r = request;
    r.problem.k = 2048;
    r.problem.rows = 512;
    r.problem.width = 131072;
    problem.apply(&r.problem);
    {
      const int64_t pitch = r.problem.pitch ? r.problem.pitch : r.problem.width;
      if (pitch > kMaxSelftestElements / r.problem.rows)
        throw UsageError("rows x pitch = " + std::to_string(r.problem.rows) + " x " + std::to_string(pitch) +
                         " scores is over the selftest's limit of " + std::to_string(kMaxSelftestElements) +
                         " (32 GiB); give fewer --rows or a smaller --width or --pitch");
      if (r.problem.k > kMaxSelftestElements / r.problem.rows)
        throw UsageError("rows x K = " + std::to_string(r.problem.rows) + " x " + std::to_string(r.problem.k) +
                         " output slots is over the selftest's limit of " + std::to_string(kMaxSelftestElements));
    }
    std::string why;
    if (!detail::driver_available(&why)) {
      std::printf("selftest: skipped: %s\n", why.c_str());
      return 0;
    }
    const detail::DriverApi& cu = detail::driver();
    CUdevice dev;
    CUcontext ctx;
    detail::check_cuda(cu.cuDeviceGet(&dev, r.device), "cuDeviceGet");
    detail::check_cuda(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    detail::check_cuda(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

    sgtopk_compile_options o = options_for(r);
    o.own_workspace = 1;
    sgtopk_plan plan = nullptr;
    const auto begin = std::chrono::steady_clock::now();
    if (sgtopk_compile(&r.problem, &o, &plan) != SGTOPK_OK) {
      std::fprintf(stderr, "selftest: compile failed: %s\n", sgtopk_last_error());
      return kExitFailure;
    }
    std::unique_ptr<std::remove_pointer_t<sgtopk_plan>, decltype(&sgtopk_plan_destroy)> plan_guard(plan, sgtopk_plan_destroy);
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
      if (with_starts && pitch > len)
        starts[static_cast<size_t>(i)] = static_cast<int32_t>(rng() % static_cast<uint64_t>(pitch - len + 1));
      float* row = &scores[static_cast<size_t>(i * pitch + starts[static_cast<size_t>(i)])];
      for (int64_t j = 0; j < len; ++j) row[j] = std::max(0.0f, normal(rng));  // ReLU-like: many exact zeros
    }
    const size_t out_slots = static_cast<size_t>(rows * k);
    DeviceMemory d_scores(scores.size() * 4), d_len(lengths.size() * 4), d_starts(starts.size() * 4),
        d_idx(out_slots * 4), d_val(values ? out_slots * 4 : 4), d_stats(SGTOPK_ROUTE_STAT_SLOTS * 8);
    detail::check_cuda(cu.cuMemcpyHtoD(d_scores.ptr, scores.data(), scores.size() * 4), "cuMemcpyHtoD");
    detail::check_cuda(cu.cuMemcpyHtoD(d_len.ptr, lengths.data(), lengths.size() * 4), "cuMemcpyHtoD");
    detail::check_cuda(cu.cuMemcpyHtoD(d_starts.ptr, starts.data(), starts.size() * 4), "cuMemcpyHtoD");
    detail::check_cuda(cu.cuMemsetD32(d_idx.ptr, 0xdeadbeefu, out_slots), "cuMemsetD32");
    if (values) detail::check_cuda(cu.cuMemsetD32(d_val.ptr, 0xdeadbeefu, out_slots), "cuMemsetD32");
    detail::check_cuda(cu.cuMemsetD8(d_stats.ptr, 0, SGTOPK_ROUTE_STAT_SLOTS * 8), "cuMemsetD8");

    sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;
    args.scores = d_scores.ptr;
    args.lengths = d_len.ptr;
    args.starts = with_starts ? d_starts.ptr : 0;
    args.indices = d_idx.ptr;
    args.values = values ? d_val.ptr : 0;
    args.route_stats = route_stats ? d_stats.ptr : 0;
    if (sgtopk_select(plan, &args, nullptr) != SGTOPK_OK) {
      std::fprintf(stderr, "selftest: launch failed: %s\n", sgtopk_last_error());
      return kExitFailure;
    }
    detail::check_cuda(cu.cuCtxSynchronize(), "kernel");
    std::vector<int32_t> indices(out_slots);
    std::vector<float> value_out(values ? out_slots : 0);
    detail::check_cuda(cu.cuMemcpyDtoH(indices.data(), d_idx.ptr, indices.size() * 4), "cuMemcpyDtoH");
    if (values) detail::check_cuda(cu.cuMemcpyDtoH(value_out.data(), d_val.ptr, out_slots * 4), "cuMemcpyDtoH");
    int bad_rows = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const size_t first_slot = static_cast<size_t>(i * k);
      std::string issue = reference::check_select_row(
          &scores[static_cast<size_t>(i * pitch + starts[static_cast<size_t>(i)])], lengths[static_cast<size_t>(i)],
          static_cast<int>(k), &indices[first_slot], values ? &value_out[first_slot] : nullptr, sorted);
      if (!issue.empty() && bad_rows++ < 3) std::printf("selftest: row %lld: %s\n", static_cast<long long>(i), issue.c_str());
    }
    if (route_stats) {
      // The first launch's routes only: the graph replays below add to the same buffer.
      uint64_t stats[SGTOPK_ROUTE_STAT_SLOTS] = {};
      detail::check_cuda(cu.cuMemcpyDtoH(stats, d_stats.ptr, sizeof stats), "cuMemcpyDtoH");
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
      return kExitFailure;
    }
    std::unique_ptr<std::remove_pointer_t<sgtopk_graph>, decltype(&sgtopk_graph_destroy)> graph_guard(graph, sgtopk_graph_destroy);
    CUevent start, stop;
    cu.cuEventCreate(&start, 0);
    cu.cuEventCreate(&stop, 0);
    for (int i = 0; i < 5; ++i) sgtopk_graph_launch(graph, nullptr);
    const int reps = 50;
    cu.cuEventRecord(start, nullptr);
    for (int i = 0; i < reps; ++i) sgtopk_graph_launch(graph, nullptr);
    cu.cuEventRecord(stop, nullptr);
    detail::check_cuda(cu.cuEventSynchronize(stop), "graph replay");
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
    cu.cuEventDestroy(start);
    cu.cuEventDestroy(stop);
    return bad_rows == 0 ? 0 : kExitFailure;
  }
};

}  // namespace

Runner add_selftest(CLI::App& app) {
  auto cmd = std::make_shared<SelftestCommand>();
  cmd->request.device = 0;
  CLI::App* sub = app.add_subcommand("selftest", "On a GPU: compile, run, verify against the CPU reference, time");
  sub->footer(
      "Runs on causal ragged rows (row i holds width - rows + 1 + i scores), checks every row against the CPU\n"
      "reference, then times CUDA-graph replays. Without a CUDA driver it says why and exits 0. Host and device\n"
      "buffers: rows x pitch and rows x K at most 2^33 elements each.");
  cmd->problem.add(sub, ProblemOptions::Set::shape_pitch_flags, 2048, 512, 131072);
  // Rows start at int32 offsets: the pitch fits in int32 here.
  cmd->problem.pitch_opt->check(integer_in(0, INT32_MAX, "pitch"));  // after the general one
  const std::string group = "Compile";
  sub->add_option("--device", cmd->request.device, "CUDA device (default 0)")
      ->type_name("N")
      ->transform(integer_in(0, 1023, "device"))
      ->group(group);
  sub->add_option("--policy", cmd->request.policy_file, "policy TOML over the defaults")->type_name("FILE")->group(group);
  sub->add_option("--family", cmd->request.family, "force a kernel family: direct_exact, sampled, split or short_row")
      ->type_name("NAME")
      ->group(group);
  return [cmd] { return cmd->run(); };
}

}  // namespace sgtopk::cli
