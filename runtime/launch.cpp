#include "runtime/launch.h"

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "runtime/driver.h"
#include "runtime/error.h"

namespace sgtopk::detail {

namespace {

// Rejects a device pointer the kernel would load from or store to with a
// misaligned address (which faults and poisons the CUDA context). 0 passes:
// whether a pointer is required is checked separately.
void check_aligned(const char* name, uint64_t address, uint64_t alignment) {
  if (address % alignment == 0) return;
  char hex[2 + 16 + 1];
  std::snprintf(hex, sizeof(hex), "0x%" PRIx64, address);
  invalid_argument(std::string("args.") + name + " is not " + std::to_string(alignment) + "-byte aligned (address " +
                   hex + ")");
}

}  // namespace

DeviceSelectParams make_select_params(const Plan& plan, const sgtopk_select_args* args, uint64_t own_workspace) {
  if (args == nullptr) invalid_argument("args is NULL");
  // Callers built before route_stats existed pass the shorter struct.
  constexpr size_t kFirstSize = offsetof(sgtopk_select_args, route_stats);
  if (args->struct_size < kFirstSize)
    invalid_argument("args.struct_size is " + std::to_string(args->struct_size) + ", expected " +
                     std::to_string(sizeof(sgtopk_select_args)) + " (or " + std::to_string(kFirstSize) +
                     " from before route_stats): initialize it with SGTOPK_SELECT_ARGS_INIT");
  if (args->scores == 0) invalid_argument("args.scores is 0: the score matrix is required");
  if (args->indices == 0) invalid_argument("args.indices is 0: the output index matrix is required");
  check_aligned("scores", args->scores, 4);
  check_aligned("indices", args->indices, 4);
  check_aligned("lengths", args->lengths, 4);      // int32[rows]
  check_aligned("live_rows", args->live_rows, 4);  // int32 scalar
  if (plan.problem.values && args->values == 0)
    invalid_argument("args.values is 0 but the plan was compiled with SGTOPK_VALUES");
  if (!plan.problem.values && args->values != 0)
    invalid_argument("args.values is set but the plan was compiled without SGTOPK_VALUES");
  check_aligned("values", args->values, 4);  // float[rows][out_pitch]
  if (plan.problem.starts && args->starts == 0)
    invalid_argument("args.starts is 0 but the plan was compiled with SGTOPK_STARTS");
  if (!plan.problem.starts && args->starts != 0)
    invalid_argument("args.starts is set but the plan was compiled without SGTOPK_STARTS");
  check_aligned("starts", args->starts, 4);  // int32[rows]
  const uint64_t workspace = args->workspace != 0 ? args->workspace : own_workspace;
  if (plan.workspace_bytes > 0 && workspace == 0)
    invalid_argument("args.workspace is 0 and the plan owns none: pass " + std::to_string(plan.workspace_bytes) +
                     " bytes (sgtopk_workspace_size) or compile with own_workspace=1");
  check_aligned("workspace", workspace, 16);
  const uint64_t route_stats =
      args->struct_size >= offsetof(sgtopk_select_args, index_offsets) ? args->route_stats : 0;
  // Callers built before the index transform pass the shorter struct.
  const bool has_transform = args->struct_size >= sizeof(sgtopk_select_args);
  const uint64_t index_offsets = has_transform ? args->index_offsets : 0;
  const uint64_t page_table = has_transform ? args->page_table : 0;
  const bool wants_offsets = plan.problem.index_transform == Problem::IndexTransform::kOffsets;
  const bool wants_pages = plan.problem.index_transform == Problem::IndexTransform::kPageTable;
  if (wants_offsets && index_offsets == 0)
    invalid_argument("args.index_offsets is 0 but the plan was compiled with SGTOPK_INDEX_OFFSETS");
  if (!wants_offsets && index_offsets != 0)
    invalid_argument("args.index_offsets is set but the plan was compiled without SGTOPK_INDEX_OFFSETS");
  check_aligned("index_offsets", index_offsets, 4);  // int32[rows]
  if (wants_pages && page_table == 0)
    invalid_argument("args.page_table is 0 but the plan was compiled with SGTOPK_PAGE_TABLE");
  if (!wants_pages && page_table != 0)
    invalid_argument("args.page_table is set but the plan was compiled without SGTOPK_PAGE_TABLE");
  check_aligned("page_table", page_table, 4);  // int32[rows][page_table_pitch]
  if (plan.problem.route_stats && route_stats == 0)
    invalid_argument("args.route_stats is 0 but the plan was compiled with SGTOPK_ROUTE_STATS");
  if (!plan.problem.route_stats && route_stats != 0)
    invalid_argument("args.route_stats is set but the plan was compiled without SGTOPK_ROUTE_STATS");
  check_aligned("route_stats", route_stats, 8);
  DeviceSelectParams params{};
  params.scores = reinterpret_cast<const float*>(args->scores);
  params.lengths = reinterpret_cast<const int*>(args->lengths);
  params.starts = reinterpret_cast<const int*>(args->starts);
  params.live_rows = reinterpret_cast<const int*>(args->live_rows);
  params.indices = reinterpret_cast<int*>(args->indices);
  params.values = reinterpret_cast<float*>(args->values);
  params.workspace = reinterpret_cast<void*>(workspace);
  params.rows = static_cast<unsigned long long>(plan.problem.rows);
  params.route_stats = reinterpret_cast<unsigned long long*>(route_stats);
  params.index_offsets = reinterpret_cast<const int*>(index_offsets);
  params.page_table = reinterpret_cast<const int*>(page_table);
  return params;
}

static_assert(SGTOPK_F32 == sgtopk::kFilterF32 && SGTOPK_BF16 == sgtopk::kFilterBf16 && SGTOPK_F16 == sgtopk::kFilterF16,
              "the filter's kDtype is sgtopk_dtype's value");

static_assert(kFilterCandidateCapacity == sgtopk::kFilterCandidates,
              "the candidate capacity is the kernel's shared candidate buffer");
static_assert(offsetof(sgtopk::FilterRowShared<>, candidate_index) ==
                  offsetof(sgtopk::FilterRowShared<>, candidate_key) + sizeof(sgtopk::FilterRowShared<>::candidate_key),
              "top-p alone reads the candidate keys and indices as one window of keys (filter_row.cuh's window_keys)");

DeviceFilterParams make_filter_params(const Plan& plan, const sgtopk_filter_args* args, uint64_t own_workspace) {
  if (args == nullptr) invalid_argument("args is NULL");
  // Callers built before the candidate and sample outputs, or before the
  // workspace, pass a shorter struct.
  constexpr size_t kFirstSize = offsetof(sgtopk_filter_args, candidate_indices);
  constexpr size_t kOutputsSize = offsetof(sgtopk_filter_args, workspace);
  if (args->struct_size < kFirstSize)
    invalid_argument("args.struct_size is " + std::to_string(args->struct_size) + ", expected " +
                     std::to_string(sizeof(sgtopk_filter_args)) + " (or " + std::to_string(kOutputsSize) +
                     " from before workspace, " + std::to_string(kFirstSize) +
                     " from before candidate_indices): initialize it with SGTOPK_FILTER_ARGS_INIT");
  const size_t given = args->struct_size >= sizeof(sgtopk_filter_args) ? sizeof(sgtopk_filter_args)
                       : args->struct_size >= kOutputsSize               ? kOutputsSize
                                                                         : kFirstSize;
  sgtopk_filter_args a = SGTOPK_FILTER_ARGS_INIT;  // the fields a shorter struct lacks stay 0
  std::memcpy(&a, args, given);
  if (given < sizeof a) a.workspace = 0;
  a.struct_size = sizeof a;
  const Problem& p = plan.problem;
  if (a.logits == 0) invalid_argument("args.logits is 0: the logits matrix is required");
  if (p.filter_mask && a.out == 0)
    invalid_argument("args.out is 0: the output matrix is required (args.logits to filter in place)");
  if (!p.filter_mask && a.out != 0)
    invalid_argument("args.out is set but the plan was compiled without SGTOPK_FILTER_MASK (the logits are only read)");
  const uint64_t elem = static_cast<uint64_t>(dtype_bytes(p.dtype));
  check_aligned("logits", a.logits, elem);     // dtype[rows][pitch]
  check_aligned("out", a.out, elem);           // dtype[rows][pitch]
  check_aligned("top_k", a.top_k, 4);          // int32[rows]
  check_aligned("top_p", a.top_p, 4);          // float[rows]
  check_aligned("temperature", a.temperature, 4);  // float[rows]
  check_aligned("live_rows", a.live_rows, 4);  // int32 scalar
  // The kernel reads a token and writes it in the same thread, so the very
  // same matrix is safe; any other overlap would read masked values back.
  const uint64_t extent = static_cast<uint64_t>((p.rows - 1) * p.pitch + p.width) * elem;
  if (a.out != 0 && a.out != a.logits && a.out < a.logits + extent && a.logits < a.out + extent)
    invalid_argument("args.out overlaps args.logits without being equal: filter in place (out = logits) or into a "
                     "separate matrix");
  // The candidate output: indices and counts required, logits and probs optional.
  struct Output {
    const char* name;
    uint64_t address;
    bool optional;
  };
  const Output candidate_outputs[] = {{"candidate_indices", a.candidate_indices, false},
                                      {"candidate_logits", a.candidate_logits, true},
                                      {"candidate_probs", a.candidate_probs, true},
                                      {"candidate_counts", a.candidate_counts, false}};
  for (const Output& o : candidate_outputs) {
    if (p.filter_candidates && !o.optional && o.address == 0)
      invalid_argument(std::string("args.") + o.name + " is 0 but the plan was compiled with SGTOPK_FILTER_CANDIDATES");
    if (!p.filter_candidates && o.address != 0)
      invalid_argument(std::string("args.") + o.name + " is set but the plan was compiled without SGTOPK_FILTER_CANDIDATES");
    check_aligned(o.name, o.address, 4);  // int32 / float [rows][out_pitch], counts int32[rows]
  }
  if (p.filter_sample && a.sampled_tokens == 0)
    invalid_argument("args.sampled_tokens is 0 but the plan was compiled with SGTOPK_FILTER_SAMPLE");
  if (!p.filter_sample && a.sampled_tokens != 0)
    invalid_argument("args.sampled_tokens is set but the plan was compiled without SGTOPK_FILTER_SAMPLE");
  if (!p.filter_sample && a.seeds != 0)
    invalid_argument("args.seeds is set but the plan was compiled without SGTOPK_FILTER_SAMPLE");
  check_aligned("sampled_tokens", a.sampled_tokens, 4);  // int32[rows]
  check_aligned("seeds", a.seeds, 8);                    // uint64[rows]
  const uint64_t workspace = a.workspace != 0 ? a.workspace : own_workspace;
  if (plan.workspace_bytes > 0 && workspace == 0)
    invalid_argument("args.workspace is 0 and the plan owns none: pass " + std::to_string(plan.workspace_bytes) +
                     " bytes (sgtopk_workspace_size) or compile with own_workspace=1");
  check_aligned("workspace", workspace, 16);
  DeviceFilterParams params{};
  params.logits = reinterpret_cast<const void*>(a.logits);
  params.out = reinterpret_cast<void*>(a.out);
  params.pitch = static_cast<long long>(p.pitch);
  params.rows = static_cast<int>(p.rows);    // validate_problem: below 2^31
  params.width = static_cast<int>(p.width);  // at most 2^23
  params.top_k = reinterpret_cast<const int*>(a.top_k);
  params.top_p = reinterpret_cast<const float*>(a.top_p);
  params.temperature = reinterpret_cast<const float*>(a.temperature);
  params.live_rows = reinterpret_cast<const int*>(a.live_rows);
  params.top_k_value = a.top_k_value;
  params.top_p_value = a.top_p_value;
  params.temperature_value = a.temperature_value;
  params.mask_value = a.mask_value;
  params.candidate_indices = reinterpret_cast<int*>(a.candidate_indices);
  params.candidate_logits = reinterpret_cast<float*>(a.candidate_logits);
  params.candidate_probs = reinterpret_cast<float*>(a.candidate_probs);
  params.candidate_counts = reinterpret_cast<int*>(a.candidate_counts);
  params.candidate_pitch = static_cast<long long>(p.out_pitch);
  params.candidate_capacity = p.k;
  params.sampled_tokens = reinterpret_cast<int*>(a.sampled_tokens);
  params.seeds = reinterpret_cast<const unsigned long long*>(a.seeds);
  params.seed_value = a.seed_value;
  params.workspace = reinterpret_cast<void*>(workspace);
  return params;
}

namespace {

// Launch 1 runs the plan's second kernel where it has one (filter_row's
// top-p-alone rows); otherwise every launch runs the first.
bool runs_second_kernel(const Plan& plan, unsigned phase) { return phase == 1 && !plan.second.entry.empty(); }

// Launch `phase`'s geometry, into either a launch config or a graph node.
template <typename Launch>
void set_geometry(const Plan& plan, unsigned phase, Launch& launch) {
  const bool second = runs_second_kernel(plan, phase);
  launch.gridDimX = second ? plan.second.grid : plan.grid;
  launch.gridDimY = 1;
  launch.gridDimZ = 1;
  launch.blockDimX = second ? plan.second.block : plan.block;
  launch.blockDimY = 1;
  launch.blockDimZ = 1;
  launch.sharedMemBytes = second ? plan.second.dynamic_smem_bytes : plan.dynamic_smem_bytes;
}

// Launch `phase`'s kernel.
CUfunction function_for(const LoadedKernel& kernel, const Plan& plan, unsigned phase) {
  return runs_second_kernel(plan, phase) ? kernel.second_function : kernel.function;
}

// A stream of another context (another device's, or one the plan was not
// loaded in) would launch where the module does not exist: refused in the
// caller's terms before anything is enqueued. The default stream handles
// resolve to the context made current for the launch.
void check_stream_context(CUstream stream, CUcontext context) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) return;
  CUcontext owner = nullptr;
  const CUresult r = driver().cuStreamGetCtx(stream, &owner);
  if (r != CUDA_SUCCESS) {
    const char* why = nullptr;
    driver().cuGetErrorString(r, &why);
    invalid_argument(std::string("the stream is not a usable CUDA stream (cuStreamGetCtx: ") + (why ? why : "unknown error") +
                     ")");
  }
  if (owner != context)
    invalid_argument("the stream belongs to another CUDA context than the plan's (the primary context of the device it "
                     "was compiled for): launch it on a stream of that device's primary context, or compile a plan for "
                     "the stream's device");
}

// The parameters of the plan's launch `phase` (a filter plan may make two).
template <typename Params>
Params for_phase(const Params& params, unsigned phase) {
  Params p = params;
  if constexpr (std::is_same_v<Params, DeviceFilterParams>) p.phase = static_cast<int>(phase);
  return p;
}

}  // namespace

unsigned needed_launches(const Plan& plan, const DeviceSelectParams&) { return (1u << plan.launches) - 1u; }

unsigned needed_launches(const Plan& plan, const DeviceFilterParams& params) {
  const unsigned every = (1u << plan.launches) - 1u;
  if (plan.launches < 2) return every;
  // A top-p-alone row: k outside (0, width) and p below 1 (NaN is off).
  // A greedy temperature makes any row top-1; ignored here, the kernels
  // read it per row.
  const bool k_on = params.top_k_value > 0 && params.top_k_value < params.width;
  const bool top_k_everywhere = params.top_k == nullptr && k_on;
  const bool top_p_nowhere = params.top_p == nullptr && !(params.top_p_value < 1.0f);
  const bool some_top_p_alone = !top_k_everywhere && !top_p_nowhere;
  if (plan.second.entry.empty()) return some_top_p_alone ? every : 1u;
  // The first kernel's rows: every other row, none where the scalars make
  // every row top-p alone (a temperature that scales, or 1).
  const float t = params.temperature_value;
  const bool greedy_nowhere = params.temperature == nullptr && t > 0.0f && t < std::numeric_limits<float>::infinity();
  const bool top_p_alone_everywhere = params.top_k == nullptr && !k_on && params.top_p == nullptr &&
                                      params.top_p_value < 1.0f && greedy_nowhere;
  return (top_p_alone_everywhere ? 0u : 1u) | (some_top_p_alone ? 2u : 0u);
}

template <typename Params>
void launch_kernel(const LoadedKernel& kernel, const Plan& plan, const Params& params, CUstream stream) {
  check_stream_context(stream, kernel.context);
  ScopedContext scope(kernel.context);
  const unsigned needed = needed_launches(plan, params);
  for (unsigned phase = 0; phase < plan.launches; ++phase) {
    if ((needed >> phase & 1u) == 0u) continue;
    CUlaunchConfig config = {};
    set_geometry(plan, phase, config);
    config.hStream = stream;
    Params copy = for_phase(params, phase);
    void* kernel_args[] = {&copy};
    check_cuda(driver().cuLaunchKernelEx(&config, function_for(kernel, plan, phase), kernel_args, nullptr),
               "cuLaunchKernelEx");
  }
}

template <typename Params>
LaunchGraph<Params>::LaunchGraph(const LoadedKernel& kernel, const Plan& plan, const Params& params)
    : kernel_(kernel), plan_(plan), params_(params) {
  ScopedContext scope(kernel.context);
  chain_ = build(params);
}

template <typename Params>
typename LaunchGraph<Params>::Chain LaunchGraph<Params>::build(const Params& params) const {
  const DriverApi& cu = driver();
  Chain chain;
  chain.launches = needed_launches(plan_, params);
  check_cuda(cu.cuGraphCreate(&chain.graph, 0), "cuGraphCreate");
  try {
    for (unsigned phase = 0; phase < plan_.launches; ++phase) {  // each launch after the one before
      if ((chain.launches >> phase & 1u) == 0u) continue;
      Params p = for_phase(params, phase);
      CUDA_KERNEL_NODE_PARAMS node = node_params(&p, phase);
      CUgraphNode added = nullptr;
      check_cuda(cu.cuGraphAddKernelNode(&added, chain.graph, chain.nodes.empty() ? nullptr : &chain.nodes.back(),
                                         chain.nodes.empty() ? 0 : 1, &node),
                 "cuGraphAddKernelNode");
      chain.nodes.push_back(added);
      chain.phases.push_back(phase);
    }
    check_cuda(cu.cuGraphInstantiate(&chain.exec, chain.graph, 0), "cuGraphInstantiate");
  } catch (...) {
    destroy(chain);
    throw;
  }
  return chain;
}

template <typename Params>
void LaunchGraph<Params>::destroy(Chain& chain) noexcept {
  try {
    const DriverApi& cu = driver();
    if (chain.exec) cu.cuGraphExecDestroy(chain.exec);
    if (chain.graph) cu.cuGraphDestroy(chain.graph);
  } catch (...) {
  }
  chain = Chain{};
}

template <typename Params>
LaunchGraph<Params>::~LaunchGraph() {
  try {
    ScopedContext scope(kernel_.context);
    destroy(chain_);
  } catch (...) {
  }
}

template <typename Params>
CUDA_KERNEL_NODE_PARAMS LaunchGraph<Params>::node_params(Params* params, unsigned phase) const {
  static thread_local void* kernel_args[1];
  kernel_args[0] = params;
  CUDA_KERNEL_NODE_PARAMS node = {};
  node.func = function_for(kernel_, plan_, phase);
  set_geometry(plan_, phase, node);
  node.kernelParams = kernel_args;  // copied by the driver when the node is added or set
  return node;
}

template <typename Params>
void LaunchGraph<Params>::update(const Params& params) {
  ScopedContext scope(kernel_.context);
  if (needed_launches(plan_, params) != chain_.launches) {  // other launches: a new chain, swapped in once it stands
    Chain next = build(params);
    destroy(chain_);
    chain_ = std::move(next);
    params_ = params;
    return;
  }
  // The driver copies the arguments, so the new ones are kept only once it
  // has accepted them: a node's failure sets the nodes before it back.
  for (size_t i = 0; i < chain_.nodes.size(); ++i) {
    Params next = for_phase(params, chain_.phases[i]);
    CUDA_KERNEL_NODE_PARAMS node = node_params(&next, chain_.phases[i]);
    const CUresult r = driver().cuGraphExecKernelNodeSetParams(chain_.exec, chain_.nodes[i], &node);
    if (r != CUDA_SUCCESS) {
      for (size_t j = 0; j < i; ++j) {
        Params before = for_phase(params_, chain_.phases[j]);
        CUDA_KERNEL_NODE_PARAMS back = node_params(&before, chain_.phases[j]);
        driver().cuGraphExecKernelNodeSetParams(chain_.exec, chain_.nodes[j], &back);
      }
      check_cuda(r, "cuGraphExecKernelNodeSetParams");
    }
  }
  params_ = params;
}

template <typename Params>
void LaunchGraph<Params>::launch(CUstream stream) {
  check_stream_context(stream, kernel_.context);
  ScopedContext scope(kernel_.context);
  check_cuda(driver().cuGraphLaunch(chain_.exec, stream), "cuGraphLaunch");
}

template void launch_kernel(const LoadedKernel&, const Plan&, const DeviceSelectParams&, CUstream);
template void launch_kernel(const LoadedKernel&, const Plan&, const DeviceFilterParams&, CUstream);
template class LaunchGraph<DeviceSelectParams>;
template class LaunchGraph<DeviceFilterParams>;

}  // namespace sgtopk::detail
