// Stage 5: NVRTC. Source + named headers + options -> cubin for one target.
// It knows sources and options only; what they are for is decided above it.
#pragma once

#include <string>
#include <vector>

#include "runtime/generated_source.h"

namespace sgtopk::detail {

// "13.0"
std::string nvrtc_version();

// Compiles to a cubin (SASS for `arch`, no PTX JIT at load). On failure
// writes a self-contained reproduction folder (source, headers, options,
// log) under SGTOPK_DUMP_DIR and throws SGTOPK_ERROR_COMPILE naming it.
// `log_out`, when given, receives NVRTC's program log of the successful compile
// (warnings; with --ptxas-options=-v, ptxas's per-function resource report).
std::vector<char> compile_cubin(const GeneratedSource& source, const std::vector<std::string>& options,
                                const std::string& arch, const std::string& tag, std::string* log_out = nullptr);

// Writes source, headers and options into `dir` (also used by SGTOPK_KEEP_SOURCES).
void write_source_folder(const std::string& dir, const GeneratedSource& source, const std::vector<std::string>& options,
                         const std::string& log);

}  // namespace sgtopk::detail
