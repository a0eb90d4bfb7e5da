// Stage 7: launching. cuLaunchKernelEx only; no allocation, no
// synchronization, no device-to-host read, so it can be captured in a graph.
#pragma once

#include <sgtopk/sgtopk.h>

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "runtime/kernel_module.h"
#include "templates/sgtopk/abi.h"
#include "runtime/plan.h"

namespace sgtopk::detail {

// The kernels' parameters, as declared for both sides in templates/sgtopk/abi.h.
using DeviceSelectParams = sgtopk::SelectParams;
using DeviceFilterParams = sgtopk::FilterParams;

// Checks the caller's pointers against the plan (in the caller's terms) and
// packs them. `own_workspace` is used when args->workspace is 0.
DeviceSelectParams make_select_params(const Plan& plan, const sgtopk_select_args* args, uint64_t own_workspace);
// The same for a filter plan's launch.
DeviceFilterParams make_filter_params(const Plan& plan, const sgtopk_filter_args* args, uint64_t own_workspace);

// The plan's launches these parameters need, a bit each (bit i: launch i):
// a filter_split plan's second launch weighs top-p-alone rows only; a plan
// with a second kernel (Plan::second) runs the top-p-alone rows there and
// the others in the first. A launch is left out where the scalars rule its
// rows out (no per-row k, p or temperature array; e.g. top-k on for every
// row, or top-p off for every row). Every launch otherwise.
unsigned needed_launches(const Plan& plan, const DeviceSelectParams& params);
unsigned needed_launches(const Plan& plan, const DeviceFilterParams& params);

// The launches these parameters need (needed_launches, one after another on
// the stream) of the plan's kernels with their one parameter struct.
template <typename Params>
void launch_kernel(const LoadedKernel& kernel, const Plan& plan, const Params& params, CUstream stream);

// The launches as a CUDA graph: a chain of kernel nodes, one for each
// launch needed_launches asks for (a disabled node still costs each replay
// microseconds: docs/decisions/2026-12-07-graphs-hold-the-needed-launches.md).
// Instantiate once, replay, swap pointers; an update whose scalars need
// other launches builds the chain anew; a failed update leaves the graph as
// it was.
template <typename Params>
class LaunchGraph {
 public:
  LaunchGraph(const LoadedKernel& kernel, const Plan& plan, const Params& params);
  ~LaunchGraph();
  LaunchGraph(const LaunchGraph&) = delete;
  LaunchGraph& operator=(const LaunchGraph&) = delete;

  void update(const Params& params);
  void launch(CUstream stream);

 private:
  // One instantiated chain and the launches it holds.
  struct Chain {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    std::vector<CUgraphNode> nodes;   // in launch order
    std::vector<unsigned> phases;     // nodes[i] runs launch phases[i]
    unsigned launches = 0;            // bit i: launch i is a node (needed_launches of the params built from)
  };
  Chain build(const Params& params) const;
  static void destroy(Chain& chain) noexcept;
  CUDA_KERNEL_NODE_PARAMS node_params(Params* params, unsigned phase) const;

  const LoadedKernel& kernel_;
  const Plan& plan_;
  Params params_;
  Chain chain_;
};
using SelectGraph = LaunchGraph<DeviceSelectParams>;
using FilterGraph = LaunchGraph<DeviceFilterParams>;

}  // namespace sgtopk::detail
