// Stage 7: the plan's own workspace, a zero-filled device allocation that
// lives exactly as long as the plan (RAII over cuMemAlloc / cuMemFree).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace sgtopk::detail {

class DeviceWorkspace {
 public:
  DeviceWorkspace() = default;
  // Allocates `bytes` in `context` and zero-fills them before returning.
  DeviceWorkspace(CUcontext context, uint64_t bytes);
  ~DeviceWorkspace();
  DeviceWorkspace(DeviceWorkspace&& other) noexcept;
  DeviceWorkspace& operator=(DeviceWorkspace&& other) noexcept;
  DeviceWorkspace(const DeviceWorkspace&) = delete;
  DeviceWorkspace& operator=(const DeviceWorkspace&) = delete;

  uint64_t address() const { return static_cast<uint64_t>(ptr_); }
  uint64_t bytes() const { return bytes_; }

 private:
  void release() noexcept;

  CUcontext context_ = nullptr;
  CUdeviceptr ptr_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace sgtopk::detail
