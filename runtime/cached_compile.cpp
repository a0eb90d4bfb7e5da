#include "runtime/cached_compile.h"

#include "runtime/knobs.h"
#include "runtime/log.h"
#include "runtime/nvrtc_compiler.h"

namespace sgtopk::detail {

KernelCache& global_kernel_cache() {
  // Never destroyed: kernels may still be requested from threads running at exit.
  static KernelCache* cache = new KernelCache(DiskCache(knobs().cache_dir, knobs().disable_disk_cache, knobs().cache_read_only));
  return *cache;
}

CachedBinary get_or_compile(const CompileRequest& request, const std::string& what) {
  const std::string hex = request.key.hex();
  return global_kernel_cache().get_or_compile(request.key, request.manifest, [&] {
    log_info("compiling " + what + " for " + request.arch + " (key " + hex + ")");
    return compile_cubin(request.source, request.options, request.arch, what + "-" + hex);
  });
}

}  // namespace sgtopk::detail
