// sgtopk simulate: the sampled route's decisions (reference::decide_sampled_route)
// over rows of the library's row families, on the CPU: how often a row is
// certified by the primary proposal, needs the band pass, or falls back to
// the exact route, and how many candidates certification admits. It predicts
// the sampled family's traffic (ALGORITHM.md, table 2) before any kernel runs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "reference/row_families.h"
#include "reference/sampled_route.h"
#include "runtime/error.h"
#include "runtime/policy.h"
#include "tools/cli/commands.h"
#include "tools/cli/config_files.h"
#include "tools/cli/npy.h"

namespace sgtopk::cli {
namespace {

using reference::SampledDecision;

// The work one simulate may ask for: rows x width x families scores
// generated and decided (2^36: minutes on one core), and the rows in flight
// at once (one per thread) at most 2^32 bytes.
constexpr int64_t kMaxSimulatedScores = int64_t{1} << 36;
constexpr int64_t kMaxRowBytesInFlight = int64_t{1} << 32;
// A score file (--scores) is held in memory whole: at most 2^34 bytes.
constexpr uint64_t kMaxScoreFileBytes = uint64_t{1} << 34;

struct RouteTally {
  int64_t rows = 0, short_rows = 0, primary = 0, band = 0, exact = 0;  // exact includes no-view
  int64_t certified_admitted = 0;  // sum of the candidates of primary and band rows
  int stride_min = INT_MAX, stride_max = 0;

  void add(const SampledDecision& d) {
    ++rows;
    switch (d.route) {
      case SampledDecision::kShort: ++short_rows; return;  // no view, no stride: nothing is sampled
      case SampledDecision::kPrimary: ++primary; break;
      case SampledDecision::kBand: ++band; break;
      case SampledDecision::kNoView:
      case SampledDecision::kExact: ++exact; break;
    }
    certified_admitted += d.admitted();
    stride_min = std::min(stride_min, d.stride);
    stride_max = std::max(stride_max, d.stride);
  }
  void merge(const RouteTally& o) {
    rows += o.rows;
    short_rows += o.short_rows;
    primary += o.primary;
    band += o.band;
    exact += o.exact;
    certified_admitted += o.certified_admitted;
    stride_min = std::min(stride_min, o.stride_min);
    stride_max = std::max(stride_max, o.stride_max);
  }
};

void print_tally(const char* name, const RouteTally& t, int k) {
  auto pct = [&](int64_t n) { return t.rows ? 100.0 * static_cast<double>(n) / static_cast<double>(t.rows) : 0.0; };
  const int64_t certified = t.primary + t.band;
  char admitted[32] = "-";
  if (certified > 0) {
    std::snprintf(admitted, sizeof admitted, "%.2f",
                  static_cast<double>(t.certified_admitted) / static_cast<double>(certified) / k);
  }
  char stride[32] = "-";
  if (t.stride_max > 0) {
    if (t.stride_min == t.stride_max) std::snprintf(stride, sizeof stride, "%d", t.stride_max);
    else std::snprintf(stride, sizeof stride, "%d/%d", t.stride_min, t.stride_max);
  }
  std::printf("%-20s %6lld %8.1f %6.1f %6.1f %6.1f %11s %7s\n", name, static_cast<long long>(t.rows), pct(t.primary),
              pct(t.band), pct(t.exact), pct(t.short_rows), admitted, stride);
}

// The rows' routes under one policy, pooled over the families: the rates,
// the certified rows' candidates (admitted / K), and the predicted reads of
// a row in units of its length (ALGORITHM.md table 2: primary 1 + v, band
// 2 + v, exact 3 + v, v the view's share of the row; short rows read none).
struct GridTally {
  RouteTally routes;
  std::vector<float> admitted_per_k;
  double reads = 0.0;
  int64_t selecting_rows = 0;

  void add(const SampledDecision& d, int64_t len, int k) {
    routes.add(d);
    if (d.route == SampledDecision::kShort) return;
    ++selecting_rows;
    const double v = len > 0 ? static_cast<double>(d.view_size) / static_cast<double>(len) : 0.0;
    reads += (d.route == SampledDecision::kPrimary ? 1.0 : d.route == SampledDecision::kBand ? 2.0 : 3.0) + v;
    if (d.route == SampledDecision::kPrimary || d.route == SampledDecision::kBand)
      admitted_per_k.push_back(static_cast<float>(d.admitted()) / static_cast<float>(k));
  }
  void merge(const GridTally& o) {
    routes.merge(o.routes);
    admitted_per_k.insert(admitted_per_k.end(), o.admitted_per_k.begin(), o.admitted_per_k.end());
    reads += o.reads;
    selecting_rows += o.selecting_rows;
  }
};

void print_grid_line(const PolicyGridPoint& g, GridTally& t) {
  auto pct = [&](int64_t n) {
    return t.routes.rows ? 100.0 * static_cast<double>(n) / static_cast<double>(t.routes.rows) : 0.0;
  };
  std::sort(t.admitted_per_k.begin(), t.admitted_per_k.end());
  auto quantile = [&](double q) -> std::string {
    if (t.admitted_per_k.empty()) return "-";
    const size_t i = std::min(t.admitted_per_k.size() - 1, static_cast<size_t>(q * static_cast<double>(t.admitted_per_k.size())));
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", t.admitted_per_k[i]);
    return text;
  };
  char reads[32] = "-";
  if (t.selecting_rows > 0) std::snprintf(reads, sizeof reads, "%.3f", t.reads / static_cast<double>(t.selecting_rows));
  std::printf("%8.1f %6.1f %6.1f %6s %6s %6s %6s  %s\n", pct(t.routes.primary), pct(t.routes.band), pct(t.routes.exact),
              quantile(0.5).c_str(), quantile(0.9).c_str(), quantile(0.99).c_str(), reads, g.label.c_str());
}

struct SimulateCommand {
  ProblemOptions problem;
  std::string family = "indexer_like";
  std::string policy_file;
  std::string grid_file;
  std::string scores_path, lengths_path;
  bool causal = false;
  CLI::App* app = nullptr;

  int run() {
    sgtopk_problem p = SGTOPK_PROBLEM_INIT;
    p.k = 2048;
    p.rows = 256;
    p.width = 262144;
    problem.apply(&p);  // each in range: checked by the options
    const int k = p.k;
    int64_t rows = p.rows, width = p.width;

    // Rows from a score file (as `sgtopk replay` reads it) instead of the generator.
    std::vector<float> file_scores;
    std::vector<int32_t> file_lengths;
    if (!lengths_path.empty() && scores_path.empty()) throw UsageError("--lengths needs --scores");
    if (!scores_path.empty()) {
      for (const char* name : {"--family", "--causal", "--rows", "--width"})
        if (app->count(name) > 0)
          throw UsageError(std::string(name) + " does not apply to --scores (the file gives the rows and their width)");
      ScoreMatrix scores = read_score_matrix(scores_path, kMaxScoreFileBytes);
      rows = scores.rows;
      width = scores.width;
      file_scores = std::move(scores.scores);
      if (!lengths_path.empty()) file_lengths = read_row_values(lengths_path, "lengths", rows, width);
    }
    const bool from_file = !file_scores.empty();

    namespace rf = sgtopk::rows;
    std::vector<rf::RowFamily> families;
    if (family == "all") {
      families = rf::all_row_families();
    } else if (auto f = rf::family_from_name(family)) {
      families.push_back(*f);
    } else {
      std::string known;
      for (rf::RowFamily g : rf::all_row_families()) known += std::string(rf::family_name(g)) + ", ";
      throw UsageError("unknown row family '" + family + "' (known: " + known + "all)");
    }
    const int64_t n_families = static_cast<int64_t>(families.size());
    if (rows > kMaxSimulatedScores / width / n_families)
      throw UsageError("rows x width x families = " + std::to_string(rows) + " x " + std::to_string(width) + " x " +
                       std::to_string(n_families) + " scores is over simulate's limit of " +
                       std::to_string(kMaxSimulatedScores) + " (2^36); give fewer --rows or a smaller --width");

    detail::Policy policy = detail::Policy::defaults();
    if (!policy_file.empty()) {
      try {
        policy = detail::parse_policy_file(policy_file);
      } catch (const detail::Error& e) {
        throw UsageError(e.what());
      }
    }
    std::vector<PolicyGridPoint> grid;
    if (!grid_file.empty()) {
      try {
        grid = parse_policy_grid(read_config_file(grid_file), grid_file, policy);
      } catch (const detail::Error& e) {
        throw UsageError(e.what());
      }
    }
    const detail::SelectSampledPolicy& sp = policy.sampled;

    // Row i of a causal batch (prefill) sees width - rows + 1 + i keys; a file's row its given length.
    auto length_of = [&](int64_t i) -> int64_t {
      if (from_file) return file_lengths.empty() ? width : file_lengths[static_cast<size_t>(i)];
      return causal ? std::max<int64_t>(0, width - rows + 1 + i) : width;
    };
    std::printf("simulate: K=%d, %lld %s of length %lld..%lld; stride %d for rows >= %lld wide, else %d; "
                "margins %.3g (primary) / %.3g (band)\n",
                k, static_cast<long long>(rows), causal ? "causal rows" : "rows", static_cast<long long>(length_of(0)),
                static_cast<long long>(length_of(rows - 1)), sp.stride_wide,
                static_cast<long long>(sp.wide_row_threshold), sp.stride_narrow, sp.primary_margin,
                sp.secondary_margin);

    // Each (family, row) gets its own seed, from the family's identity and the
    // row index, so a family's rows are the same alone or within `all`.
    auto seed_of = [](rf::RowFamily f, int64_t i) {
      return 0x5eed2026c0ffee11ull ^ (static_cast<uint64_t>(f) + 1) * 0x9E3779B97F4A7C15ull ^
             static_cast<uint64_t>(i) * 0xBF58476D1CE4E5B9ull;
    };
    if (from_file) families.resize(1);  // one set of rows: the file's
    const std::string rows_label = from_file ? scores_path : "";
    const size_t tasks = families.size() * static_cast<size_t>(rows);
    const size_t memory_threads = static_cast<size_t>(std::max<int64_t>(1, kMaxRowBytesInFlight / (width * 4)));
    const size_t threads =
        std::min({static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency())), tasks, memory_threads});
    std::vector<std::vector<RouteTally>> partial(threads, std::vector<RouteTally>(families.size()));
    std::vector<std::vector<GridTally>> grid_partial(threads, std::vector<GridTally>(grid.size()));
    std::atomic<size_t> next{0}, done{0};
    std::exception_ptr error;  // the first one a worker met (a row that did not fit in memory): rethrown below
    std::mutex error_lock;
    auto worker = [&](size_t t) {
      try {
        for (size_t task = next++; task < tasks; task = next++) {
          const size_t fi = task / static_cast<size_t>(rows);
          const int64_t i = static_cast<int64_t>(task % static_cast<size_t>(rows));
          const int64_t len = length_of(i);
          std::vector<float> generated;
          if (!from_file) {
            std::mt19937_64 rng(seed_of(families[fi], i));
            generated = rf::make_row(families[fi], len, k, rng);
          }
          const float* row = from_file ? file_scores.data() + i * width : generated.data();
          // The row id is the row's index in the launch, as on the GPU.
          if (grid.empty()) partial[t][fi].add(reference::decide_sampled_route(row, len, k, static_cast<uint64_t>(i), sp));
          for (size_t g = 0; g < grid.size(); ++g)
            grid_partial[t][g].add(
                reference::decide_sampled_route(row, len, k, static_cast<uint64_t>(i), grid[g].policy.sampled), len, k);
          ++done;
        }
      } catch (...) {
        next = tasks;  // the others stop too
        std::lock_guard<std::mutex> lock(error_lock);
        if (!error) error = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    try {
      for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "sgtopk simulate: warning: started %zu of %zu threads: %s\n", pool.size(), threads, e.what());
    }
    // A progress bar on a terminal (not in logs), from this thread.
    if (!pool.empty() && ::isatty(STDERR_FILENO)) {
      for (size_t d = done; d < tasks && !error; d = done) {
        const int filled = static_cast<int>(40 * d / tasks);
        std::fprintf(stderr, "\r[%s%s] %zu/%zu rows", std::string(static_cast<size_t>(filled), '#').c_str(),
                     std::string(static_cast<size_t>(40 - filled), '.').c_str(), d, tasks);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      std::fprintf(stderr, "\r%60s\r", "");
    }
    if (pool.empty()) worker(0);
    for (auto& th : pool) th.join();
    if (error) std::rethrow_exception(error);

    if (!grid.empty()) {
      std::printf("%zu policies from %s over %s (%zu rows):\n", grid.size(), grid_file.c_str(),
                  from_file ? rows_label.c_str() : families.size() > 1 ? "every row family" : rf::family_name(families[0]),
                  tasks);
      std::printf("%8s %6s %6s %6s %6s %6s %6s  %s\n", "primary%", "band%", "exact%", "a/K50", "a/K90", "a/K99", "reads",
                  "policy");
      for (size_t g = 0; g < grid.size(); ++g) {
        GridTally t;
        for (auto& part : grid_partial) t.merge(part[g]);
        print_grid_line(grid[g], t);
      }
      std::printf("exact%% includes rows whose view is too small; a/K: the certified rows' candidates over K (median, "
                  "90th, 99th percentile); reads: predicted reads of a selecting row in units of its length "
                  "(ALGORITHM.md table 2: 1, 2 or 3 passes plus the view).\n");
      return 0;
    }

    std::printf("%-20s %6s %8s %6s %6s %6s %11s %7s\n", "family", "rows", "primary%", "band%", "exact%", "short%",
                "admitted/K", "stride");
    RouteTally total;
    for (size_t fi = 0; fi < families.size(); ++fi) {
      RouteTally t;
      for (const auto& part : partial) t.merge(part[fi]);
      print_tally(from_file ? rows_label.c_str() : rf::family_name(families[fi]), t, k);
      total.merge(t);
    }
    if (families.size() > 1) print_tally("all", total, k);
    std::printf("exact%% includes rows whose view is too small (no view); short: len <= K, nothing to select; "
                "admitted/K: mean candidates over the certified (primary + band) rows.\n");
    return 0;
  }
};

}  // namespace

Runner add_simulate(CLI::App& app) {
  auto cmd = std::make_shared<SimulateCommand>();
  CLI::App* sub = app.add_subcommand("simulate", "CPU only: the sampled route's decisions per row family");
  sub->footer(
      "Prints, per row family, the % of rows certified by the primary proposal, by the band pass, sent to the\n"
      "exact route, or short (len <= K), and the candidates admitted / K. rows x width x families at most 2^36.");
  cmd->app = sub;
  cmd->problem.add(sub, ProblemOptions::Set::shape, 2048, 256, 262144);
  sub->add_option("--family", cmd->family, "a row family, or all (default indexer_like)")->type_name("NAME|all");
  sub->add_option("--policy", cmd->policy_file, "policy TOML over the defaults (its [select.sampled] keys)")
      ->type_name("FILE");
  sub->add_flag("--causal", cmd->causal, "row i sees width - rows + 1 + i keys (prefill)");
  sub->add_option("--grid", cmd->grid_file,
                  "experiment TOML: a [grid] table of dotted policy keys, each an array of values; every combination\n"
                  "is one policy over --policy (at most 256), all decided on the same rows")
      ->type_name("FILE");
  sub->add_option("--scores", cmd->scores_path,
                  "decide on the rows of a float32 .npy matrix (rows x width, as `sgtopk replay` reads it) instead of\n"
                  "generated rows")
      ->type_name("SCORES.npy");
  sub->add_option("--lengths", cmd->lengths_path, "with --scores: int32/int64 .npy of each row's valid length")
      ->type_name("LEN.npy");
  return [cmd] { return cmd->run(); };
}

}  // namespace sgtopk::cli
