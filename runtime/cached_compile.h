// Stage 5: get or compile. The process-wide kernel cache (memory in front of
// the disk cache, configured by the knobs) serves a compile request, or NVRTC
// compiles it, once per key in this process.
#pragma once

#include <string>

#include "cache/kernel_cache.h"
#include "runtime/compile_request.h"

namespace sgtopk::detail {

// Built from knobs() (SGTOPK_CACHE_DIR, SGTOPK_DISABLE_DISK_CACHE) on first use.
KernelCache& global_kernel_cache();

// `what` names the kernel in log lines and failure dumps (e.g. the family).
CachedBinary get_or_compile(const CompileRequest& request, const std::string& what);

}  // namespace sgtopk::detail
