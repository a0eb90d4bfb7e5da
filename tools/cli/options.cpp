// Shared CLI pieces (commands.h): the integer validator, the problem options,
// compile options from a request, bounded file reading.

#include <algorithm>
#include <charconv>

#include "cache/files.h"
#include "runtime/problem.h"
#include "tools/cli/commands.h"

namespace sgtopk::cli {

CLI::Validator integer_in(int64_t lo, int64_t hi, const std::string& label) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, label, range](std::string& text) -> std::string {
        const size_t sign = !text.empty() && text[0] == '-' ? 1 : 0;
        if (text.size() == sign || !std::all_of(text.begin() + static_cast<std::ptrdiff_t>(sign), text.end(),
                                                [](char c) { return c >= '0' && c <= '9'; }))
          return "'" + text + "' is not a decimal integer";
        int64_t n = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        (void)end;  // digits only: all of them are read
        if (ec != std::errc() || n < lo || n > hi) return label + "=" + text + " is invalid: " + label + " must be in " + range;
        text = std::to_string(n);
        return "";
      },
      "", "integer " + range);
}

void ProblemOptions::add(CLI::App* app, Set set, int64_t default_k, int64_t default_rows, int64_t default_width) {
  using detail::kMaxK;
  using detail::kMaxRows;
  using detail::kMaxWidth;
  const std::string group = "Problem";
  k_opt = app->add_option("--k", k, "K: indices kept per row, 1.." + std::to_string(kMaxK) + " (default " +
                                         std::to_string(default_k) + ")")
              ->type_name("N")
              ->transform(integer_in(1, kMaxK, "K"))
              ->group(group);
  rows_opt = app->add_option("--rows", rows, "row capacity, 1.." + std::to_string(kMaxRows - 1) + " (default " +
                                                 std::to_string(default_rows) + ")")
                 ->type_name("N")
                 ->transform(integer_in(1, kMaxRows - 1, "rows"))
                 ->group(group);
  width_opt = app->add_option("--width", width, "widest row, 1.." + std::to_string(kMaxWidth) + " (default " +
                                                    std::to_string(default_width) + ")")
                  ->type_name("N")
                  ->transform(integer_in(1, kMaxWidth, "width"))
                  ->group(group);
  if (set == Set::shape) return;
  // The library bounds a pitch by the width and the address arithmetic; a
  // selftest allocates rows x pitch on the host and the device (its own bound).
  pitch_opt = app->add_option("--pitch", pitch, "floats from one row's start to the next; 0 (the default): width")
                  ->type_name("N")
                  ->transform(integer_in(0, INT64_MAX, "pitch"))
                  ->group(group);
  if (set == Set::all) {
    out_pitch_opt = app->add_option("--out-pitch", out_pitch, "output slots from one row to the next; 0 (the default): K")
                        ->type_name("N")
                        ->transform(integer_in(0, INT64_MAX, "out_pitch"))
                        ->group(group);
  }
  app->add_flag("--values", values, "also write the selected scores")->group(group);
  app->add_flag("--sorted", sorted, "order each row by value, descending")->group(group);
  app->add_flag("--starts", starts, "rows carry a start offset")->group(group);
  app->add_flag("--route-stats", route_stats, "count the route each row takes")->group(group);
  if (set != Set::all) return;
  app->add_flag("--index-offsets", index_offsets, "write index + offsets[row] (SGTOPK_INDEX_OFFSETS)")->group(group);
  page_size_opt = app->add_option("--page-size", page_size,
                                  "write page_table[row][index / N] * N + index % N (SGTOPK_PAGE_TABLE)")
                      ->type_name("N")
                      ->transform(integer_in(1, INT32_MAX, "page_size"))
                      ->group(group);
  page_table_pitch_opt =
      app->add_option("--page-table-pitch", page_table_pitch, "page-table entries per row; 0 (the default): ceil(width / page size)")
          ->type_name("N")
          ->transform(integer_in(0, INT64_MAX, "page_table_pitch"))
          ->needs(page_size_opt)
          ->group(group);
}

void ProblemOptions::apply(sgtopk_problem* p) const {
  auto given = [](const CLI::Option* o) { return o != nullptr && o->count() > 0; };
  if (given(k_opt)) p->k = static_cast<int32_t>(k);  // 1..kMaxK: checked
  if (given(rows_opt)) p->rows = rows;
  if (given(width_opt)) p->width = width;
  if (given(pitch_opt)) p->pitch = pitch;
  if (given(out_pitch_opt)) p->out_pitch = out_pitch;
  if (values) p->flags |= SGTOPK_VALUES;
  if (sorted) p->flags |= SGTOPK_SORTED;
  if (starts) p->flags |= SGTOPK_STARTS;
  if (route_stats) p->flags |= SGTOPK_ROUTE_STATS;
  if (index_offsets) p->flags |= SGTOPK_INDEX_OFFSETS;
  if (given(page_size_opt)) {
    p->flags |= SGTOPK_PAGE_TABLE;
    p->page_size = static_cast<int32_t>(page_size);
  }
  if (given(page_table_pitch_opt)) p->page_table_pitch = page_table_pitch;
}

sgtopk_compile_options options_for(const Request& r) {
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = r.device;
  o.arch = r.arch.empty() ? nullptr : r.arch.c_str();
  o.policy_file = r.policy_file.empty() ? nullptr : r.policy_file.c_str();
  o.family = r.family.empty() ? nullptr : r.family.c_str();
  return o;
}

void add_gpu_compile_options(CLI::App* sub, Request& r) {
  const std::string group = "Compile";
  sub->add_option("--device", r.device, "CUDA device (default 0)")
      ->type_name("N")
      ->transform(integer_in(0, 1023, "device"))
      ->group(group);
  sub->add_option("--policy", r.policy_file, "policy TOML over the defaults")->type_name("FILE")->group(group);
  sub->add_option("--family", r.family, "force a kernel family: direct_exact, sampled, split, short_row or cluster")
      ->type_name("NAME")
      ->group(group);
}

std::string read_config_file(const std::string& path) {
  // The library's reader (cache/files.h): a regular file of at most 1 MiB,
  // opened without blocking, so a FIFO or a device is refused, not waited on.
  const detail::FileBytes file = detail::read_regular_file(path, uint64_t{1} << 20, /*follow_links=*/true);
  if (!file.error.empty()) throw UsageError(path + ": cannot read: " + file.error);
  return std::string(file.bytes.begin(), file.bytes.end());
}

}  // namespace sgtopk::cli
