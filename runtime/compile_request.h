// Stage 4: the compile request. A generated source, its target and its NVRTC
// options, with the cache key and manifest that cover all of them: the one
// value the cache and the compiler are asked about.
#pragma once

#include <string>
#include <vector>

#include "cache/cache_key.h"
#include "runtime/generated_source.h"
#include "runtime/policy.h"

namespace sgtopk::detail {

struct CompileRequest {
  GeneratedSource source;
  std::string arch;                  // e.g. "sm_90"
  std::vector<std::string> options;  // NVRTC options
  CacheKeyInputs key_inputs;
  CacheKey key;
  std::string manifest;  // stored next to the cubin, checked on load
};

// The NVRTC options for an architecture under the policy's [compile] table.
std::vector<std::string> nvrtc_options(const std::string& arch, const CompilePolicy& policy);

CompileRequest make_compile_request(GeneratedSource source, const std::string& arch, const CompilePolicy& policy);

}  // namespace sgtopk::detail
