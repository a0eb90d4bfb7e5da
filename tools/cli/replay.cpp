// sgtopk replay: select on a saved score matrix (NumPy .npy, as numpy.save
// and torch users dump it) through the planner on the GPU, verified against
// the CPU reference, timed against the floor; sgtopk capture: write such
// files from the library's row generator (reference/row_families.h).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "reference/row_families.h"
#include "runtime/driver.h"
#include "runtime/problem.h"
#include "tools/cli/commands.h"
#include "tools/cli/gpu_run.h"
#include "tools/cli/npy.h"

namespace sgtopk::cli {
namespace {

// A replayed matrix is held on the host and the device: at most 2^33 scores.
constexpr uint64_t kMaxReplayBytes = uint64_t{1} << 35;

struct ReplayCommand {
  std::string scores_path, lengths_path, starts_path;
  int64_t k = 2048;
  bool values = false, sorted = false, route_stats = false;
  Request request;

  int run() {
    ScoreMatrix scores = read_score_matrix(scores_path, kMaxReplayBytes);
    const int64_t rows = scores.rows, width = scores.width;
    if (rows >= detail::kMaxRows || width > detail::kMaxWidth)
      throw UsageError(scores_path + ": " + std::to_string(rows) + " x " + std::to_string(width) +
                       " is beyond the library's rows or width");
    HostRows host;
    host.pitch = width;
    host.scores = std::move(scores.scores);
    host.lengths = lengths_path.empty() ? std::vector<int32_t>(static_cast<size_t>(rows), static_cast<int32_t>(width))
                                        : read_row_values(lengths_path, "lengths", rows, width);
    host.starts.assign(static_cast<size_t>(rows), 0);
    if (!starts_path.empty()) {
      host.starts = read_row_values(starts_path, "starts", rows, width);
      for (int64_t i = 0; i < rows; ++i)
        if (host.starts[static_cast<size_t>(i)] + int64_t{host.lengths[static_cast<size_t>(i)]} > width)
          throw UsageError(starts_path + ": row " + std::to_string(i) + "'s window (start " +
                           std::to_string(host.starts[static_cast<size_t>(i)]) + ", length " +
                           std::to_string(host.lengths[static_cast<size_t>(i)]) + ") ends past the width " +
                           std::to_string(width));
    }
    Request r = request;
    r.name = scores_path;
    r.problem.k = static_cast<int32_t>(k);
    r.problem.rows = rows;
    r.problem.width = width;
    r.problem.flags = (values ? SGTOPK_VALUES : 0u) | (sorted ? SGTOPK_SORTED : 0u) |
                      (route_stats ? SGTOPK_ROUTE_STATS : 0u) | (starts_path.empty() ? 0u : SGTOPK_STARTS);
    return run_and_check(r, host, "replay");
  }
};

struct CaptureCommand {
  ProblemOptions problem;
  std::string family = "indexer_like", out_path, lengths_out;
  bool causal = false;
  uint64_t seed = 2026;

  int run() {
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.k = 2048;
    p.rows = 64;
    p.width = 65536;
    problem.apply(&p);
    const auto f = rows::family_from_name(family);
    if (!f) throw UsageError("unknown row family '" + family + "'");
    if (static_cast<uint64_t>(p.rows) * static_cast<uint64_t>(p.width) * 4 > kMaxReplayBytes)
      throw UsageError("rows x width x 4 bytes is over replay's limit of " + std::to_string(kMaxReplayBytes));
    std::vector<float> scores(static_cast<size_t>(p.rows * p.width), 0.0f);
    std::vector<int32_t> lengths(static_cast<size_t>(p.rows));
    for (int64_t i = 0; i < p.rows; ++i) {
      const int64_t len = causal ? std::max<int64_t>(0, p.width - p.rows + 1 + i) : p.width;
      lengths[static_cast<size_t>(i)] = static_cast<int32_t>(len);
      std::mt19937_64 rng(seed ^ (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull));
      const std::vector<float> row = rows::make_row(*f, len, p.k, rng);
      std::copy(row.begin(), row.end(), scores.begin() + i * p.width);
    }
    write_npy(out_path, "<f4", {p.rows, p.width}, scores.data());
    if (!lengths_out.empty()) write_npy(lengths_out, "<i4", {p.rows}, lengths.data());
    std::printf("capture: %lld x %lld %s rows%s -> %s%s%s\n", static_cast<long long>(p.rows),
                static_cast<long long>(p.width), family.c_str(), causal ? " (causal lengths)" : "", out_path.c_str(),
                lengths_out.empty() ? "" : ", lengths -> ", lengths_out.c_str());
    return 0;
  }
};

}  // namespace

Runner add_replay(CLI::App& app) {
  auto cmd = std::make_shared<ReplayCommand>();
  cmd->request.device = 0;
  CLI::App* sub = app.add_subcommand("replay", "On a GPU: select on a saved score matrix (.npy), verify, time");
  sub->footer(
      "SCORES.npy: float32, rows x width, C order (numpy.save, torch.Tensor.numpy). --lengths / --starts: int32\n"
      "or int64, one per row. The plan is the planner's (or --family's) for that shape; every row is checked\n"
      "against the CPU reference. Without a CUDA driver the files are still checked, then it says why and exits 0.");
  sub->add_option("SCORES", cmd->scores_path, "the score matrix (.npy)")->required()->type_name("SCORES.npy");
  sub->add_option("--lengths", cmd->lengths_path, "each row's valid length (default: the width)")->type_name("LEN.npy");
  sub->add_option("--starts", cmd->starts_path, "each row's window start")->type_name("S.npy");
  sub->add_option("--k", cmd->k, "K (default 2048)")->type_name("N")->transform(integer_in(1, detail::kMaxK, "K"));
  sub->add_flag("--values", cmd->values, "also write the selected scores");
  sub->add_flag("--sorted", cmd->sorted, "order each row by value, descending");
  sub->add_flag("--route-stats", cmd->route_stats, "print the route each row took");
  add_gpu_compile_options(sub, cmd->request);
  return [cmd] { return cmd->run(); };
}

Runner add_capture(CLI::App& app) {
  auto cmd = std::make_shared<CaptureCommand>();
  CLI::App* sub = app.add_subcommand("capture", "Write generated score rows as .npy, for replay");
  cmd->problem.add(sub, ProblemOptions::Set::shape, 2048, 64, 65536);
  sub->add_option("--family", cmd->family, "a row family of `sgtopk simulate` (default indexer_like)")->type_name("NAME");
  sub->add_flag("--causal", cmd->causal, "row i holds width - rows + 1 + i scores (the rest 0)");
  sub->add_option("--out", cmd->out_path, "the score matrix to write")->required()->type_name("SCORES.npy");
  sub->add_option("--lengths-out", cmd->lengths_out, "also write the lengths")->type_name("LEN.npy");
  return [cmd] { return cmd->run(); };
}

}  // namespace sgtopk::cli
