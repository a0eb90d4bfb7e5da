#include "runtime/workspace.h"

#include <utility>

#include "runtime/driver.h"
#include "runtime/error.h"

namespace sgtopk::detail {

DeviceWorkspace::DeviceWorkspace(CUcontext context, uint64_t bytes) : context_(context), bytes_(bytes) {
  const DriverApi& cu = driver();
  ScopedContext scope(context);
  check_cuda(cu.cuMemAlloc(&ptr_, bytes), "cuMemAlloc(workspace)");
  // Kernels keep their row counters there and leave them zeroed. The zero
  // fill runs on a private non-blocking stream and only it is waited for:
  // not the caller's work on the legacy stream or the context.
  CUstream fill = nullptr;
  CUresult done = cu.cuStreamCreate(&fill, CU_STREAM_NON_BLOCKING);
  if (done == CUDA_SUCCESS) {
    const CUresult set = bytes % 4u == 0u ? cu.cuMemsetD32Async(ptr_, 0u, bytes / 4u, fill)
                                          : cu.cuMemsetD8Async(ptr_, 0u, bytes, fill);
    done = set == CUDA_SUCCESS ? cu.cuStreamSynchronize(fill) : set;
    cu.cuStreamDestroy(fill);
  }
  if (done != CUDA_SUCCESS) {
    release();  // no destructor runs for a constructor that throws
    check_cuda(done, "zero-filling the workspace");
  }
}

DeviceWorkspace::~DeviceWorkspace() { release(); }

DeviceWorkspace::DeviceWorkspace(DeviceWorkspace&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceWorkspace& DeviceWorkspace::operator=(DeviceWorkspace&& other) noexcept {
  if (this != &other) {
    release();
    context_ = std::exchange(other.context_, nullptr);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceWorkspace::release() noexcept {
  if (ptr_ == 0) return;
  try {
    ScopedContext scope(context_);
    driver().cuMemFree(ptr_);
  } catch (...) {
    // Never throw from a destructor; the process may be exiting.
  }
  ptr_ = 0;
}

}  // namespace sgtopk::detail
