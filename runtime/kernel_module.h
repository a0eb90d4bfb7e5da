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
  CUfunction function = nullptr;
  double load_ms = 0;
  ~LoadedKernel();
};

// Loads the module (or returns the one already loaded for this context and
// key) and sets the kernel's attributes once: the dynamic shared memory limit.
std::shared_ptr<LoadedKernel> load_kernel(CUcontext context, const std::string& key_hex,
                                          const std::vector<char>& cubin, const std::string& entry,
                                          unsigned dynamic_smem_bytes);

}  // namespace sgtopk::detail
