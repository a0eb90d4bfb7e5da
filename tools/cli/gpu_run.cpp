#include "tools/cli/gpu_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "reference/select.h"
#include "runtime/driver.h"
#include "runtime/error.h"

namespace sgtopk::cli {
namespace {

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

// GB/s of a 512 MiB device-to-device copy (bytes read plus bytes written over
// the time), the best of 5: the bandwidth the floor is measured at. 0 when
// the memory is not there.
double copy_bandwidth_gbps() {
  const detail::DriverApi& cu = detail::driver();
  const size_t bytes = size_t{512} << 20;
  CUdeviceptr a = 0, b = 0;
  if (cu.cuMemAlloc(&a, bytes) != CUDA_SUCCESS) return 0.0;
  if (cu.cuMemAlloc(&b, bytes) != CUDA_SUCCESS) {
    cu.cuMemFree(a);
    return 0.0;
  }
  CUevent start, stop;
  cu.cuEventCreate(&start, 0);
  cu.cuEventCreate(&stop, 0);
  float best = 0.0f;
  for (int i = 0; i < 6; ++i) {
    cu.cuEventRecord(start, nullptr);
    cu.cuMemcpyDtoD(b, a, bytes);
    cu.cuEventRecord(stop, nullptr);
    cu.cuEventSynchronize(stop);
    float ms = 0.0f;
    cu.cuEventElapsedTime(&ms, start, stop);
    if (i > 0 && ms > 0.0f && (best == 0.0f || ms < best)) best = ms;  // the first warms up
  }
  cu.cuEventDestroy(start);
  cu.cuEventDestroy(stop);
  cu.cuMemFree(a);
  cu.cuMemFree(b);
  return best > 0.0f ? 2.0 * static_cast<double>(bytes) / (static_cast<double>(best) * 1e6) : 0.0;
}

}  // namespace

int run_and_check(const Request& r, const HostRows& host, const std::string& label) {
  std::string why;
  if (!detail::driver_available(&why)) {
    std::printf("%s: skipped: %s\n", label.c_str(), why.c_str());
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
    std::fprintf(stderr, "%s: compile failed: %s\n", label.c_str(), sgtopk_last_error());
    return kExitFailure;
  }
  std::unique_ptr<std::remove_pointer_t<sgtopk_plan>, decltype(&sgtopk_plan_destroy)> plan_guard(plan, sgtopk_plan_destroy);
  const double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  sgtopk_plan_describe(plan, &info);
  std::printf("%s: plan %s, grid %u x block %u, %u B shared, workspace %llu B, cache key %s\n", label.c_str(), info.family,
              info.grid[0], info.block[0], info.dynamic_smem_bytes, static_cast<unsigned long long>(info.workspace_bytes),
              info.cache_key);

  const int64_t rows = r.problem.rows, width = r.problem.width, k = r.problem.k;
  const bool values = (r.problem.flags & SGTOPK_VALUES) != 0, sorted = (r.problem.flags & SGTOPK_SORTED) != 0;
  const bool with_starts = (r.problem.flags & SGTOPK_STARTS) != 0;
  const bool route_stats = (r.problem.flags & SGTOPK_ROUTE_STATS) != 0;
  const int64_t pitch = host.pitch;
  const std::vector<float>& scores = host.scores;
  const std::vector<int32_t>& lengths = host.lengths;
  const std::vector<int32_t>& starts = host.starts;
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
    std::fprintf(stderr, "%s: launch failed: %s\n", label.c_str(), sgtopk_last_error());
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
    if (!issue.empty() && bad_rows++ < 3) std::printf("%s: row %lld: %s\n", label.c_str(), static_cast<long long>(i), issue.c_str());
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
    std::fprintf(stderr, "%s: graph failed: %s\n", label.c_str(), sgtopk_last_error());
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
  double bytes = 4.0 * static_cast<double>(rows) * static_cast<double>(k);  // the index writes
  for (int32_t l : lengths) bytes += 4.0 * l;
  const double ms = total_ms / reps;
  const double bandwidth = copy_bandwidth_gbps();  // GB/s; 0 when it could not be measured
  char floor_text[96] = "";
  if (bandwidth > 0)
    std::snprintf(floor_text, sizeof floor_text, ", floor %.4f ms (%.2fx)", bytes / (bandwidth * 1e6),
                  ms / (bytes / (bandwidth * 1e6)));
  std::printf("%s: %s K=%lld rows=%lld width=%lld on %s: %s, %.4f ms per call%s, compile+load %.1f ms (%s)\n",
              label.c_str(), info.family, static_cast<long long>(k), static_cast<long long>(rows),
              static_cast<long long>(width), info.arch, bad_rows == 0 ? "exact" : "WRONG", ms, floor_text, compile_ms,
              info.from_cache ? "from cache" : "compiled");
  cu.cuEventDestroy(start);
  cu.cuEventDestroy(stop);
  return bad_rows == 0 ? 0 : kExitFailure;
}

}  // namespace sgtopk::cli
