#include "runtime/kernel_module.h"

#include <chrono>
#include <map>
#include <mutex>
#include <utility>

#include "runtime/driver.h"
#include "runtime/error.h"

namespace sgtopk::detail {

LoadedKernel::~LoadedKernel() {
  if (module == nullptr) return;
  try {
    ScopedContext scope(context);
    driver().cuModuleUnload(module);
  } catch (...) {
    // The driver may already be shutting down at process exit.
  }
}

namespace {

CUfunction function_of(CUmodule module, const KernelEntry& entry) {
  const DriverApi& cu = driver();
  CUfunction function = nullptr;
  check_cuda(cu.cuModuleGetFunction(&function, module, entry.name.c_str()), "cuModuleGetFunction");
  check_cuda(cu.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(entry.dynamic_smem_bytes)),
             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  return function;
}

}  // namespace

std::shared_ptr<LoadedKernel> load_kernel(CUcontext context, const std::string& key_hex,
                                          const std::vector<char>& cubin, const KernelEntry& first,
                                          const KernelEntry& second) {
  static std::mutex mutex;
  static std::map<std::pair<CUcontext, std::string>, std::weak_ptr<LoadedKernel>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = loaded[{context, key_hex + ":" + first.name}];
  if (auto existing = slot.lock()) return existing;
  const DriverApi& cu = driver();
  ScopedContext scope(context);
  const auto begin = std::chrono::steady_clock::now();
  auto kernel = std::make_shared<LoadedKernel>();
  kernel->context = context;
  check_cuda(cu.cuModuleLoadData(&kernel->module, cubin.data()), "cuModuleLoadData");
  kernel->function = function_of(kernel->module, first);
  if (!second.name.empty()) kernel->second_function = function_of(kernel->module, second);
  kernel->load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  slot = kernel;
  return kernel;
}

}  // namespace sgtopk::detail
