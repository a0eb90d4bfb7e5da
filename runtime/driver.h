// The CUDA Driver API, opened with dlopen("libcuda.so.1") on first use and
// never linked, so that everything that needs no GPU (planning, NVRTC,
// the cache, prewarm) runs on machines without a driver.
#pragma once

#include <cuda.h>

#include <string>

namespace sgtopk::detail {

// Function pointers of the driver entry points sgtopk uses. The names are the
// versioned symbols that cuda.h's macros would select.
struct DriverApi {
#define SGTOPK_DRIVER_FUNCTIONS(X)                         \
  X(cuInit, cuInit)                                        \
  X(cuGetErrorString, cuGetErrorString)                    \
  X(cuDriverGetVersion, cuDriverGetVersion)                \
  X(cuDeviceGet, cuDeviceGet)                              \
  X(cuDeviceGetCount, cuDeviceGetCount)                    \
  X(cuDeviceGetName, cuDeviceGetName)                      \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute)            \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)    \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2) \
  X(cuCtxGetCurrent, cuCtxGetCurrent)                      \
  X(cuCtxSetCurrent, cuCtxSetCurrent)                      \
  X(cuCtxPushCurrent, cuCtxPushCurrent_v2)                 \
  X(cuCtxPopCurrent, cuCtxPopCurrent_v2)                   \
  X(cuCtxSynchronize, cuCtxSynchronize)                    \
  X(cuModuleLoadData, cuModuleLoadData)                    \
  X(cuModuleUnload, cuModuleUnload)                        \
  X(cuModuleGetFunction, cuModuleGetFunction)              \
  X(cuFuncSetAttribute, cuFuncSetAttribute)                \
  X(cuFuncGetAttribute, cuFuncGetAttribute)                \
  X(cuLaunchKernelEx, cuLaunchKernelEx)                    \
  X(cuMemAlloc, cuMemAlloc_v2)                             \
  X(cuMemFree, cuMemFree_v2)                               \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2)                         \
  X(cuMemcpyDtoD, cuMemcpyDtoD_v2)                         \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2)                         \
  X(cuMemsetD32, cuMemsetD32_v2)                           \
  X(cuMemsetD8, cuMemsetD8_v2)                             \
  X(cuMemsetD32Async, cuMemsetD32Async)                    \
  X(cuMemsetD8Async, cuMemsetD8Async)                      \
  X(cuStreamCreate, cuStreamCreate)                        \
  X(cuStreamDestroy, cuStreamDestroy_v2)                   \
  X(cuStreamSynchronize, cuStreamSynchronize)              \
  X(cuStreamGetCtx, cuStreamGetCtx)                        \
  X(cuStreamBeginCapture, cuStreamBeginCapture_v2)         \
  X(cuStreamEndCapture, cuStreamEndCapture)                \
  X(cuEventCreate, cuEventCreate)                          \
  X(cuEventDestroy, cuEventDestroy_v2)                     \
  X(cuEventRecord, cuEventRecord)                          \
  X(cuEventSynchronize, cuEventSynchronize)                \
  X(cuEventElapsedTime, cuEventElapsedTime_v2)             \
  X(cuGraphCreate, cuGraphCreate)                          \
  X(cuGraphDestroy, cuGraphDestroy)                        \
  X(cuGraphAddKernelNode, cuGraphAddKernelNode_v2)         \
  X(cuGraphInstantiate, cuGraphInstantiateWithFlags)       \
  X(cuGraphExecDestroy, cuGraphExecDestroy)                \
  X(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2) \
  X(cuGraphLaunch, cuGraphLaunch)

#define SGTOPK_DECLARE_POINTER(name, symbol) decltype(&::symbol) name = nullptr;
  SGTOPK_DRIVER_FUNCTIONS(SGTOPK_DECLARE_POINTER)
#undef SGTOPK_DECLARE_POINTER
};

// The driver, opened and initialized once. Throws sgtopk::Error with
// SGTOPK_ERROR_NO_DRIVER ("no CUDA driver: ...") when libcuda.so.1 is absent
// or cuInit fails.
const DriverApi& driver();

// True when a driver and at least one device are present (never throws).
bool driver_available(std::string* why = nullptr);

// Throws SGTOPK_ERROR_CUDA naming `what` when `result` is not CUDA_SUCCESS.
void check_cuda(CUresult result, const char* what);

// RAII: make `context` current for a scope, restoring the previous one.
class ScopedContext {
 public:
  explicit ScopedContext(CUcontext context);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace sgtopk::detail
