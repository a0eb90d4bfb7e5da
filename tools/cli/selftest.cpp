// sgtopk selftest: on a GPU, compile a plan, run it on causal ragged rows,
// verify every row against the CPU reference, and time CUDA-graph replays.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/driver.h"
#include "tools/cli/commands.h"
#include "tools/cli/gpu_run.h"

namespace sgtopk::cli {
namespace {

// Host and device memory a selftest may ask for: rows x pitch scores and
// rows x K output slots, each at most 2^33 (32 GiB of floats).
constexpr int64_t kMaxSelftestElements = int64_t{1} << 33;

struct SelftestCommand {
  ProblemOptions problem;
  Request request;

  int run() {
    Request r = request;
    r.problem.k = 2048;
    r.problem.rows = 512;
    r.problem.width = 131072;
    problem.apply(&r.problem);
    {
      const int64_t pitch = r.problem.pitch ? r.problem.pitch : r.problem.width;
      if (pitch > kMaxSelftestElements / r.problem.rows)
        throw UsageError("rows x pitch = " + std::to_string(r.problem.rows) + " x " + std::to_string(pitch) +
                         " scores is over the selftest's limit of " + std::to_string(kMaxSelftestElements) +
                         " (32 GiB); give fewer --rows or a smaller --width or --pitch");
      if (r.problem.k > kMaxSelftestElements / r.problem.rows)
        throw UsageError("rows x K = " + std::to_string(r.problem.rows) + " x " + std::to_string(r.problem.k) +
                         " output slots is over the selftest's limit of " + std::to_string(kMaxSelftestElements));
    }
    std::string why;
    if (!detail::driver_available(&why)) {  // before generating rows for nothing
      std::printf("selftest: skipped: %s\n", why.c_str());
      return 0;
    }
    // Causal ragged rows: row i has length width - rows + 1 + i (clamped);
    // with --starts, each row's window begins at a random (unaligned) offset.
    const int64_t rows = r.problem.rows, width = r.problem.width;
    const bool with_starts = (r.problem.flags & SGTOPK_STARTS) != 0;
    const int64_t pitch = r.problem.pitch ? r.problem.pitch : width;
    HostRows host;
    host.pitch = pitch;
    std::vector<float>& scores = host.scores;
    std::vector<int32_t>& lengths = host.lengths;
    std::vector<int32_t>& starts = host.starts;
    scores.assign(static_cast<size_t>(rows * pitch), std::nanf(""));
    lengths.assign(static_cast<size_t>(rows), 0);
    starts.assign(static_cast<size_t>(rows), 0);
    std::mt19937_64 rng(20261129);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t len = std::max<int64_t>(0, width - rows + 1 + i);
      lengths[static_cast<size_t>(i)] = static_cast<int32_t>(len);
      if (with_starts && pitch > len)
        starts[static_cast<size_t>(i)] = static_cast<int32_t>(rng() % static_cast<uint64_t>(pitch - len + 1));
      float* row = &scores[static_cast<size_t>(i * pitch + starts[static_cast<size_t>(i)])];
      for (int64_t j = 0; j < len; ++j) row[j] = std::max(0.0f, normal(rng));  // ReLU-like: many exact zeros
    }
    return run_and_check(r, host, "selftest");
  }
};

}  // namespace

Runner add_selftest(CLI::App& app) {
  auto cmd = std::make_shared<SelftestCommand>();
  cmd->request.device = 0;
  CLI::App* sub = app.add_subcommand("selftest", "On a GPU: compile, run, verify against the CPU reference, time");
  sub->footer(
      "Runs on causal ragged rows (row i holds width - rows + 1 + i scores), checks every row against the CPU\n"
      "reference, then times CUDA-graph replays. Without a CUDA driver it says why and exits 0. Host and device\n"
      "buffers: rows x pitch and rows x K at most 2^33 elements each.");
  cmd->problem.add(sub, ProblemOptions::Set::shape_pitch_flags, 2048, 512, 131072);
  // Rows start at int32 offsets: the pitch fits in int32 here.
  cmd->problem.pitch_opt->check(integer_in(0, INT32_MAX, "pitch"));  // after the general one
  add_gpu_compile_options(sub, cmd->request);
  return [cmd] { return cmd->run(); };
}

}  // namespace sgtopk::cli
