// Stage 6: a cubin loaded into a context. Each (context, cache key) loads
// once per process; plans that share a kernel share the module.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

namespace sgtopk::detail {

struct LoadedKernel {
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;         // the plan's entry
  CUfunction second_function = nullptr;  // Plan::second's, where the plan has one
  double load_ms = 0;
  ~LoadedKernel();
};

// A kernel of the module: its extern "C" name and dynamic shared memory.
struct KernelEntry {
  std::string name;
  unsigned dynamic_smem_bytes = 0;
};

// Loads the module (or returns the one already loaded for this context and
// key) and sets each kernel's attributes once: the dynamic shared memory
// limit. `second` is skipped where its name is empty.
std::shared_ptr<LoadedKernel> load_kernel(CUcontext context, const std::string& key_hex,
                                          const std::vector<char>& cubin, const KernelEntry& first,
                                          const KernelEntry& second);

}  // namespace sgtopk::detail
