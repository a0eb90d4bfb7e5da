#include "runtime/compile_request.h"

#include <utility>

#include "runtime/nvrtc_compiler.h"

#ifndef SGTOPK_VERSION_TEXT
#define SGTOPK_VERSION_TEXT "0.0.0"
#endif

namespace sgtopk::detail {

std::vector<std::string> nvrtc_options(const std::string& arch, const CompilePolicy& policy) {
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17", "-default-device", "-DNDEBUG"};
  if (policy.line_info) options.push_back("-lineinfo");
  if (policy.max_registers > 0) options.push_back("--maxrregcount=" + std::to_string(policy.max_registers));
  return options;
}

CompileRequest make_compile_request(GeneratedSource source, const std::string& arch, const CompilePolicy& policy) {
  CompileRequest request;
  request.source = std::move(source);
  request.arch = arch;
  request.options = nvrtc_options(arch, policy);
  CacheKeyInputs& inputs = request.key_inputs;
  inputs.source = request.source.text;
  inputs.headers = request.source.headers;
  inputs.options = request.options;
  inputs.target = arch;
  inputs.nvrtc_version = nvrtc_version();
  inputs.library_version = SGTOPK_VERSION_TEXT;
  request.key = make_cache_key(inputs);
  request.manifest = make_manifest(inputs);
  return request;
}

}  // namespace sgtopk::detail
