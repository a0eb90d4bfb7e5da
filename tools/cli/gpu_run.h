// What `sgtopk selftest` and `sgtopk replay` do on the GPU with rows they
// hold on the host: compile, run once, verify every row against the CPU
// reference, print the routes (with SGTOPK_ROUTE_STATS), time CUDA-graph
// replays against the floor (valid scores read once plus the index writes,
// at the device's copy bandwidth measured in the same run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/cli/commands.h"

namespace sgtopk::cli {

// rows x pitch scores, and each row's valid length and window start.
struct HostRows {
  std::vector<float> scores;
  std::vector<int32_t> lengths, starts;
  int64_t pitch = 0;
};

// `r.problem` describes `rows` (rows, width, pitch, K, flags). Prints lines
// starting "<label>: ". Without a CUDA driver it says why and returns 0;
// else 0 when every row is exact, kExitFailure otherwise.
int run_and_check(const Request& r, const HostRows& rows, const std::string& label);

}  // namespace sgtopk::cli
