// Stage 7: launching. cuLaunchKernelEx only; no allocation, no
// synchronization, no device-to-host read, so it can be captured in a graph.
#pragma once

#include <sgtopk/sgtopk.h>

#include <cuda.h>

#include <cstdint>

#include "runtime/kernel_module.h"
#include "templates/sgtopk/abi.h"
#include "runtime/plan.h"

namespace sgtopk::detail {

// The kernel's parameters, as declared for both sides in templates/sgtopk/abi.h.
using DeviceSelectParams = sgtopk::SelectParams;

// Checks the caller's pointers against the plan (in the caller's terms) and
// packs them. `own_workspace` is used when args->workspace is 0.
DeviceSelectParams make_select_params(const Plan& plan, const sgtopk_select_args* args, uint64_t own_workspace);

void launch_select(const LoadedKernel& kernel, const Plan& plan, const DeviceSelectParams& params, CUstream stream);

// The launch as a one-node CUDA graph: instantiate once, replay, swap pointers.
class SelectGraph {
 public:
  SelectGraph(const LoadedKernel& kernel, const Plan& plan, const DeviceSelectParams& params);
  ~SelectGraph();
  SelectGraph(const SelectGraph&) = delete;
  SelectGraph& operator=(const SelectGraph&) = delete;

  void update(const DeviceSelectParams& params);
  void launch(CUstream stream);

 private:
  CUDA_KERNEL_NODE_PARAMS node_params(DeviceSelectParams* params) const;

  const LoadedKernel& kernel_;
  const Plan& plan_;
  DeviceSelectParams params_;
  CUgraph graph_ = nullptr;
  CUgraphNode node_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace sgtopk::detail
