#include "runtime/driver.h"

#include <dlfcn.h>

#include <mutex>

#include "runtime/error.h"

namespace sgtopk::detail {

namespace {

struct LoadedDriver {
  DriverApi api;
  std::string failure;  // empty when usable
};

LoadedDriver load_driver() {
  LoadedDriver d;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    d.failure = std::string("no CUDA driver: cannot open libcuda.so.1 (") + (why ? why : "unknown") + ")";
    return d;
  }
#define SGTOPK_RESOLVE(name, symbol)                                              \
  d.api.name = reinterpret_cast<decltype(d.api.name)>(dlsym(handle, #symbol));    \
  if (!d.api.name) {                                                              \
    d.failure = "no CUDA driver: libcuda.so.1 lacks " #symbol " (driver too old)"; \
    return d;                                                                     \
  }
  SGTOPK_DRIVER_FUNCTIONS(SGTOPK_RESOLVE)
#undef SGTOPK_RESOLVE
  CUresult r = d.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* s = nullptr;
    d.api.cuGetErrorString(r, &s);
    d.failure = std::string("no CUDA driver: cuInit failed (") + (s ? s : "unknown error") + ")";
    return d;
  }
  int count = 0;
  if (d.api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) d.failure = "no CUDA device: the driver reports 0 devices";
  return d;
}

const LoadedDriver& loaded() {
  static const LoadedDriver d = load_driver();
  return d;
}

}  // namespace

const DriverApi& driver() {
  const LoadedDriver& d = loaded();
  if (!d.failure.empty()) fail(SGTOPK_ERROR_NO_DRIVER, d.failure);
  return d.api;
}

bool driver_available(std::string* why) {
  const LoadedDriver& d = loaded();
  if (why) *why = d.failure;
  return d.failure.empty();
}

void check_cuda(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* s = nullptr;
  if (loaded().api.cuGetErrorString) loaded().api.cuGetErrorString(result, &s);
  fail(SGTOPK_ERROR_CUDA, std::string(what) + " failed: " + (s ? s : "unknown CUDA error") + " (" +
                              std::to_string(static_cast<int>(result)) + ")");
}

ScopedContext::ScopedContext(CUcontext context) {
  CUcontext current = nullptr;
  check_cuda(driver().cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != context) {
    check_cuda(driver().cuCtxPushCurrent(context), "cuCtxPushCurrent");
    pushed_ = true;
  }
}

ScopedContext::~ScopedContext() {
  if (pushed_) {
    CUcontext ignored = nullptr;
    driver().cuCtxPopCurrent(&ignored);
  }
}

}  // namespace sgtopk::detail
