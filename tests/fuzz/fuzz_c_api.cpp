// Fuzz target: the C API's argument validation, never reaching NVRTC.
//
// The input is read (FuzzedDataProvider) as the fields of sgtopk_problem,
// sgtopk_compile_options (compile-only: device < 0; policy_file is never a
// path the input names) and sgtopk_select_args. Then:
//   1. validate_problem: returns a Problem inside the contract's ranges
//      (rows x pitch and rows x out_pitch at most kMaxElements included), or
//      throws Error(SGTOPK_ERROR_INVALID_ARGUMENT).
//   2. resolve_target(-1, arch): returns a target of sm_<kMinArch> or newer,
//      or throws INVALID_ARGUMENT.
//   3. the policy_toml, when any: parses or throws SGTOPK_ERROR_POLICY.
//   4. make_plan for a valid problem on the compile-only target, with the
//      parsed policy and the forced family: returns, or throws INVALID_ARGUMENT
//      (never INTERNAL, never another exception).
//   5. make_select_params on that plan (make_filter_params on a filter plan,
//      from the same pointers): returns parameters whose pointers are the
//      caller's, non-zero where required and aligned, or throws
//      INVALID_ARGUMENT.
//   6. sgtopk_compile with arguments that fail validation (when 1-4 all
//      passed, K is forced out of range so it returns before compiling): a
//      status that is not OK and not INTERNAL, one of the statuses the failing
//      checks above gave, *out_plan NULL, a non-empty sgtopk_last_error().
// Anything else (another exception or status, a crash, a sanitizer report)
// is a finding.
#include <fuzzer/FuzzedDataProvider.h>
#include <sgtopk/sgtopk.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <set>
#include <string>

#include "runtime/error.h"
#include "runtime/launch.h"
#include "runtime/plan.h"
#include "runtime/policy.h"
#include "runtime/problem.h"
#include "runtime/target.h"
#include "fuzz_common.h"
#include "runtime/knobs.h"

namespace detail = sgtopk::detail;

namespace {

[[noreturn]] void finding(const std::string& what) { sgtopk_fuzz::finding("c_api", what); }

// Runs `body`; returns nullopt when it returned, else the status it threw.
// Only sgtopk::detail::Error may escape it, with one of `allowed`.
template <typename Body>
std::optional<sgtopk_status> checked(const char* stage, std::initializer_list<sgtopk_status> allowed, Body&& body) {
  try {
    body();
    return std::nullopt;
  } catch (const detail::Error& e) {
    bool ok = false;
    for (sgtopk_status s : allowed) ok = ok || s == e.status();
    if (!ok) finding(std::string(stage) + " threw status " + sgtopk_status_string(e.status()) + ": " + e.what());
    if (std::string_view(e.what()).empty()) finding(std::string(stage) + " threw an empty message");
    return e.status();
  } catch (const std::exception& e) {
    finding(std::string(stage) + " threw a non-sgtopk exception: " + e.what());
  } catch (...) {
    finding(std::string(stage) + " threw a non-std exception");
  }
}

// Integers the checks compare against, plus whatever the fuzzer makes.
int64_t pick_i64(FuzzedDataProvider& in) {
  static const int64_t special[] = {0,  1,  -1, 2048, 8192, 8193, 100000, int64_t{1} << 30, (int64_t{1} << 30) + 1,
                                    (int64_t{1} << 31) - 1, int64_t{1} << 31, INT32_MAX, INT32_MIN,
                                    INT64_MAX, INT64_MIN, int64_t{1} << 62, 32768, 131072};
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return in.PickValueInArray(special);
    case 1: return in.ConsumeIntegralInRange<int64_t>(-4, 1 << 20);
    default: return in.ConsumeIntegral<int64_t>();
  }
}

uint64_t pick_ptr(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return 0;
    case 1: return uint64_t{0x10000} * in.ConsumeIntegralInRange<uint64_t>(1, 64);  // aligned
    case 2: return uint64_t{0x10000} + in.ConsumeIntegralInRange<uint64_t>(0, 31);
    default: return in.ConsumeIntegral<uint64_t>();
  }
}

std::optional<std::string> pick_string(FuzzedDataProvider& in, const char* const* choices, size_t n) {
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: return std::nullopt;
    case 1: return std::string(choices[in.ConsumeIntegralInRange<size_t>(0, n - 1)]);
    default: return in.ConsumeRandomLengthString(64);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Belt and braces: nothing here may reach the cache or NVRTC.
  ::setenv("SGTOPK_DISABLE_DISK_CACHE", "1", 1);
  ::setenv("SGTOPK_VERBOSE", "0", 0);
  detail::reload_knobs();  // they were read at static initialization
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);

  // ---- the problem
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  if (in.ConsumeBool()) p.struct_size = in.ConsumeIntegral<uint32_t>();
  int op = SGTOPK_OP_SELECT, dtype = SGTOPK_F32;
  if (in.ConsumeBool()) op = in.ConsumeIntegral<int>();
  if (in.ConsumeBool()) dtype = in.ConsumeIntegral<int>();
  std::memcpy(&p.op, &op, sizeof op);  // any int a C caller could store
  std::memcpy(&p.dtype, &dtype, sizeof dtype);
  p.k = static_cast<int32_t>(in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-2, 8200) : pick_i64(in));
  p.rows = pick_i64(in);
  p.width = pick_i64(in);
  p.pitch = in.ConsumeBool() ? 0 : pick_i64(in);
  p.out_pitch = in.ConsumeBool() ? 0 : pick_i64(in);
  p.flags = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint32_t>(0, 63) : in.ConsumeIntegral<uint32_t>();

  // ---- the compile options (compile-only, always)
  static const char* const archs[] = {"sm_90", "sm_90a", "sm_80", "sm_89", "sm_70", "sm_75", "sm_100", "sm_0090",
                                      "sm_9",  "sm_",    "",      "compute_90", "sm_99999999999", "sm_90b"};
  static const char* const families[] = {"direct_exact", "sampled", "", "split", "cluster"};
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  if (in.ConsumeBool()) o.struct_size = in.ConsumeIntegral<uint32_t>();
  o.device = -1 - in.ConsumeIntegralInRange<int32_t>(0, 3);
  if (in.ConsumeBool()) o.device = INT32_MIN;
  const std::optional<std::string> arch = pick_string(in, archs, std::size(archs));
  const std::optional<std::string> family = pick_string(in, families, std::size(families));
  o.arch = arch ? arch->c_str() : nullptr;
  o.family = family ? family->c_str() : nullptr;
  o.own_workspace = in.ConsumeBool() ? in.ConsumeIntegral<int32_t>() : 0;
  // A path the input cannot choose: a missing file is a policy error.
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) o.policy_file = "/nonexistent/sgtopk-fuzz/policy.toml";

  // ---- the select args
  sgtopk_select_args a = SGTOPK_SELECT_ARGS_INIT;
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) a.struct_size = in.ConsumeIntegral<uint32_t>();
  else if (in.ConsumeIntegralInRange<int>(0, 7) == 0) a.struct_size = offsetof(sgtopk_select_args, route_stats);
  else if (in.ConsumeIntegralInRange<int>(0, 7) == 0) a.struct_size = offsetof(sgtopk_select_args, index_offsets);
  a.scores = pick_ptr(in);
  a.lengths = pick_ptr(in);
  a.starts = pick_ptr(in);
  a.live_rows = pick_ptr(in);
  a.indices = pick_ptr(in);
  a.values = pick_ptr(in);
  a.workspace = pick_ptr(in);
  a.route_stats = pick_ptr(in);
  const uint64_t own_workspace = in.ConsumeBool() ? 0 : pick_ptr(in);
  // The index transform's fields (read after the rest, so older inputs keep their meaning).
  if (in.ConsumeBool()) {
    p.page_size = static_cast<int32_t>(in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-2, 4096) : pick_i64(in));
    p.page_table_pitch = in.ConsumeBool() ? 0 : pick_i64(in);
  }
  if (in.ConsumeBool()) p.struct_size = offsetof(sgtopk_problem, page_size);
  a.index_offsets = in.ConsumeBool() ? pick_ptr(in) : 0;
  a.page_table = in.ConsumeBool() ? pick_ptr(in) : 0;

  const bool k_zero = in.ConsumeBool();  // how step 6 makes K invalid
  // The rest of the input is the policy TOML, when asked for.
  const bool with_toml = in.ConsumeBool();
  const std::string toml = in.ConsumeRemainingBytesAsString();
  o.policy_toml = with_toml ? toml.c_str() : nullptr;

  std::set<sgtopk_status> failures;  // every status a check below gave

  // 1. the problem
  detail::Problem problem;
  const bool is_filter = op == SGTOPK_OP_FILTER;
  const auto problem_status = checked("validate_problem", {SGTOPK_ERROR_INVALID_ARGUMENT},
                                      [&] { problem = detail::validate_problem(&p); });
  if (problem_status) {
    failures.insert(*problem_status);
  } else if (is_filter) {
    const uint32_t outputs = SGTOPK_FILTER_MASK | SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE;
    const bool candidates = (p.flags & SGTOPK_FILTER_CANDIDATES) != 0;
    const bool ok = problem.op == SGTOPK_OP_FILTER && problem.rows >= 1 &&
                    problem.rows < detail::kMaxRows && problem.width >= 1 && problem.width <= detail::kMaxFilterWidth &&
                    problem.pitch >= problem.width && problem.pitch <= detail::kMaxElements / problem.rows &&
                    (dtype == SGTOPK_F32 || dtype == SGTOPK_BF16 || dtype == SGTOPK_F16) && (p.flags & ~outputs) == 0 &&
                    problem.filter_candidates == candidates &&
                    problem.filter_mask == ((p.flags & SGTOPK_FILTER_MASK) != 0 || (p.flags & outputs) == 0) &&
                    (candidates ? problem.k >= 1 && problem.k <= detail::kFilterCandidateCapacity &&
                                      problem.out_pitch >= problem.k &&
                                      problem.out_pitch <= detail::kMaxElements / problem.rows
                                : problem.k == 0 && problem.out_pitch == 0 && p.k == 0 && p.out_pitch == 0) &&
                    p.struct_size >= offsetof(sgtopk_problem, page_size) &&
                    (p.struct_size < sizeof(sgtopk_problem) || (p.page_size == 0 && p.page_table_pitch == 0));
    if (!ok) finding("validate_problem accepted a filter problem outside the contract: " + detail::to_string(problem));
  } else {
    // What was accepted is inside the contract's ranges.
    const bool ok = problem.k >= 1 && problem.k <= detail::kMaxK && problem.rows >= 1 &&
                    problem.rows < detail::kMaxRows && problem.width >= 1 && problem.width <= detail::kMaxWidth &&
                    problem.pitch >= problem.width && problem.out_pitch >= problem.k && op == SGTOPK_OP_SELECT &&
                    dtype == SGTOPK_F32 && p.struct_size >= offsetof(sgtopk_problem, page_size) &&
                    (p.flags & ~63u) == 0 &&
                    !((p.flags & SGTOPK_INDEX_OFFSETS) && (p.flags & SGTOPK_PAGE_TABLE)) &&
                    // the page fields: only with the page table (and read only from a struct that has them)
                    (problem.index_transform == detail::Problem::IndexTransform::kPageTable
                         ? problem.page_size >= 1 && problem.page_table_pitch >= 1 &&
                               problem.page_table_pitch >= (problem.width + problem.page_size - 1) / problem.page_size &&
                               problem.page_table_pitch <= detail::kMaxElements / problem.rows
                         : problem.page_size == 0 && problem.page_table_pitch == 0 &&
                               (p.struct_size < sizeof(sgtopk_problem) || (p.page_size == 0 && p.page_table_pitch == 0))) &&
                    // no row offset can overflow (issue 27, item 4)
                    problem.pitch <= detail::kMaxElements / problem.rows &&
                    problem.out_pitch <= detail::kMaxElements / problem.rows;
    if (!ok) finding("validate_problem accepted a problem outside the contract: " + detail::to_string(problem));
  }

  // The options, as compile_plan checks them before the policy.
  if (o.struct_size < sizeof(sgtopk_compile_options) || (o.device < 0 && o.own_workspace))
    failures.insert(SGTOPK_ERROR_INVALID_ARGUMENT);

  // 3. the policy
  detail::Policy policy = detail::Policy::defaults();
  bool policy_ok = true;
  if (o.policy_file) {
    failures.insert(SGTOPK_ERROR_POLICY);
    policy_ok = false;
  }
  if (o.policy_toml) {
    const auto s = checked("parse_policy_string", {SGTOPK_ERROR_POLICY},
                           [&] { policy = detail::parse_policy_string(o.policy_toml, "<policy_toml>", policy); });
    if (s) {
      failures.insert(*s);
      policy_ok = false;
    }
  }

  // 2. the target
  detail::Target target;
  const auto target_status = checked("resolve_target", {SGTOPK_ERROR_INVALID_ARGUMENT}, [&] {
    target = detail::resolve_target(-1, o.arch, policy.compile.default_arch);
  });
  if (target_status) {
    failures.insert(*target_status);
  } else if (target.arch.empty() || detail::arch_number(target.arch) < detail::kMinArch || target.sm_count < 1) {
    finding("resolve_target accepted arch '" + target.arch + "' (older than sm_" + std::to_string(detail::kMinArch) +
            " or no SMs)");
  }

  // 4. the plan, 5. the select args
  if (!problem_status && !target_status && policy_ok) {
    detail::Plan plan;
    const auto plan_status = checked("make_plan", {SGTOPK_ERROR_INVALID_ARGUMENT}, [&] {
      plan = detail::make_plan(problem, policy, target, o.family ? o.family : "");
    });
    if (plan_status) {
      failures.insert(*plan_status);
    } else if (is_filter) {
      sgtopk_filter_args fa = SGTOPK_FILTER_ARGS_INIT;
      if (a.struct_size < sizeof(sgtopk_select_args)) fa.struct_size = a.struct_size;
      fa.logits = a.scores;
      fa.out = a.indices;
      fa.top_k = a.lengths;
      fa.top_p = a.starts;
      fa.temperature = a.values;
      fa.live_rows = a.live_rows;
      detail::DeviceFilterParams params{};
      const auto args_status = checked("make_filter_params", {SGTOPK_ERROR_INVALID_ARGUMENT},
                                       [&] { params = detail::make_filter_params(plan, &fa, own_workspace); });
      if (!args_status) {
        const auto addr = [](const void* ptr) { return reinterpret_cast<uint64_t>(ptr); };
        const uint64_t elem = static_cast<uint64_t>(detail::dtype_bytes(plan.problem.dtype));
        const uint64_t extent = static_cast<uint64_t>((plan.problem.rows - 1) * plan.problem.pitch + plan.problem.width) * elem;
        // Without the mask output, out must be 0; a plan with the candidate or
        // sample output needs their pointers, which this input never sets.
        const bool ok = fa.struct_size >= offsetof(sgtopk_filter_args, candidate_indices) && fa.logits != 0 &&
                        fa.logits % elem == 0 && (plan.problem.filter_mask ? fa.out != 0 : fa.out == 0) &&
                        fa.out % elem == 0 && !plan.problem.filter_candidates && !plan.problem.filter_sample &&
                        fa.top_k % 4 == 0 && fa.top_p % 4 == 0 &&
                        fa.temperature % 4 == 0 && fa.live_rows % 4 == 0 && own_workspace % 16 == 0 &&
                        (plan.workspace_bytes == 0 || own_workspace != 0) &&
                        (fa.out == 0 || fa.out == fa.logits || fa.out >= fa.logits + extent || fa.logits >= fa.out + extent) &&
                        addr(params.logits) == fa.logits && addr(params.out) == fa.out &&
                        addr(params.top_k) == fa.top_k && addr(params.top_p) == fa.top_p &&
                        addr(params.temperature) == fa.temperature && addr(params.live_rows) == fa.live_rows &&
                        params.rows == plan.problem.rows && params.width == plan.problem.width &&
                        params.pitch == plan.problem.pitch;
        if (!ok) finding("make_filter_params accepted arguments outside the contract");
      }
    } else {
      detail::DeviceSelectParams params{};
      const auto args_status = checked("make_select_params", {SGTOPK_ERROR_INVALID_ARGUMENT},
                                       [&] { params = detail::make_select_params(plan, &a, own_workspace); });
      if (!args_status) {
        const auto addr = [](const void* ptr) { return reinterpret_cast<uint64_t>(ptr); };
        const uint64_t ws = a.workspace ? a.workspace : own_workspace;
        const bool new_struct = a.struct_size >= offsetof(sgtopk_select_args, index_offsets);
        const bool transform_struct = a.struct_size >= sizeof(sgtopk_select_args);
        const bool offsets = plan.problem.index_transform == detail::Problem::IndexTransform::kOffsets;
        const bool pages = plan.problem.index_transform == detail::Problem::IndexTransform::kPageTable;
        const bool ok =
            a.struct_size >= offsetof(sgtopk_select_args, route_stats) && a.scores != 0 && a.scores % 4 == 0 &&
            addr(params.scores) == a.scores && a.indices != 0 && a.indices % 4 == 0 &&
            addr(params.indices) == a.indices && a.lengths % 4 == 0 && addr(params.lengths) == a.lengths &&
            a.live_rows % 4 == 0 && addr(params.live_rows) == a.live_rows &&
            (plan.problem.values ? a.values != 0 && a.values % 4 == 0 : a.values == 0) &&
            addr(params.values) == a.values &&
            (plan.problem.starts ? a.starts != 0 && a.starts % 4 == 0 : a.starts == 0) &&
            addr(params.starts) == a.starts && (plan.workspace_bytes == 0 || ws != 0) && ws % 16 == 0 &&
            (plan.problem.route_stats ? new_struct && a.route_stats != 0 && a.route_stats % 8 == 0
                                      : !new_struct || a.route_stats == 0) &&
            addr(params.route_stats) == (new_struct ? a.route_stats : 0) &&
            (offsets ? transform_struct && a.index_offsets != 0 && a.index_offsets % 4 == 0
                     : !transform_struct || a.index_offsets == 0) &&
            addr(params.index_offsets) == (transform_struct ? a.index_offsets : 0) &&
            (pages ? transform_struct && a.page_table != 0 && a.page_table % 4 == 0
                   : !transform_struct || a.page_table == 0) &&
            addr(params.page_table) == (transform_struct ? a.page_table : 0) &&
            params.rows == static_cast<uint64_t>(plan.problem.rows);
        if (!ok) finding("make_select_params accepted arguments outside the contract");
      }
    }
  }

  // 6. the public entry point, with arguments that fail validation.
  if (failures.empty()) {
    p.k = is_filter ? -1 : k_zero ? 0 : detail::kMaxK + 1;
    failures.insert(SGTOPK_ERROR_INVALID_ARGUMENT);
  }
  sgtopk_plan out = reinterpret_cast<sgtopk_plan>(static_cast<uintptr_t>(0x1234));
  const sgtopk_status status = sgtopk_compile(&p, &o, &out);
  if (status == SGTOPK_OK) {
    sgtopk_plan_destroy(out);
    finding("sgtopk_compile accepted arguments that fail validation");
  }
  if (status == SGTOPK_ERROR_INTERNAL) finding(std::string("sgtopk_compile: internal error: ") + sgtopk_last_error());
  if (!failures.count(status))
    finding(std::string("sgtopk_compile returned ") + sgtopk_status_string(status) +
            ", a status none of the failing checks gave: " + sgtopk_last_error());
  if (out != nullptr) finding("sgtopk_compile failed but left *out_plan set");
  if (sgtopk_last_error()[0] == '\0') finding("sgtopk_compile failed with an empty sgtopk_last_error()");
  return 0;
}
