// The public C API on a machine without a GPU: argument validation (status,
// message in the caller's terms, no half-made handle), the thread-local last
// error, a compile-only plan and what it reports, launches refused cleanly,
// and the select args check (route statistics, the older shorter struct);
// the filter's problem, plan and args the same way.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sgtopk/sgtopk.h>

#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/families/families.h"
#include "runtime/launch.h"
#include "runtime/plan.h"
#include "runtime/policy.h"
#include "runtime/problem.h"
#include "runtime/target.h"
#include "support/test_support.h"

namespace {

using sgtopk::testing::contains;

sgtopk_problem good_problem() {
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.k = 2048;
  p.rows = 64;
  p.width = 12000;  // the short-row family's shape (a CTA holds a row)
  return p;
}

sgtopk_compile_options compile_only(const char* arch = "sm_90") {
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = -1;
  o.arch = arch;
  return o;
}

// A non-null value that sgtopk_compile must overwrite with NULL on failure.
sgtopk_plan sentinel_plan() { return reinterpret_cast<sgtopk_plan>(static_cast<uintptr_t>(0x1234)); }


struct Failure {
  sgtopk_status status;
  std::string message;
  bool out_plan_null;
};

Failure compile_failure(const sgtopk_problem* problem, const sgtopk_compile_options* options) {
  sgtopk_plan plan = sentinel_plan();
  const sgtopk_status status = sgtopk_compile(problem, options, &plan);
  Failure f{status, sgtopk_last_error(), plan == nullptr};
  if (status == SGTOPK_OK && plan != nullptr && plan != sentinel_plan()) sgtopk_plan_destroy(plan);
  return f;
}

// Compiles `problem` (changed by `mutate`) and expects `status` with every
// one of `needles` in the message, and *out_plan NULL.
void expect_rejected(const std::function<void(sgtopk_problem&, sgtopk_compile_options&)>& mutate,
                     sgtopk_status status, const std::vector<std::string>& needles,
                     const sgtopk_problem& base = good_problem()) {
  sgtopk_problem p = base;
  sgtopk_compile_options o = compile_only();
  mutate(p, o);
  const Failure f = compile_failure(&p, &o);
  EXPECT_EQ(f.status, status) << sgtopk_status_string(f.status) << ": " << f.message;
  EXPECT_TRUE(f.out_plan_null) << "out_plan was not set to NULL on failure";
  for (const auto& needle : needles) EXPECT_TRUE(contains(f.message, needle)) << "message: " << f.message << "\nwanted: " << needle;
}

// A value a C caller could pass that names no enumerator (no C++ conversion).
template <typename Enum>
Enum enum_from_int(int value) {
  static_assert(sizeof(Enum) == sizeof(int));
  Enum e;
  std::memcpy(&e, &value, sizeof value);
  return e;
}

bool is_hex32(const char* s) {
  if (s == nullptr || std::strlen(s) != 32) return false;
  for (const char* c = s; *c; ++c)
    if (!std::isxdigit(static_cast<unsigned char>(*c)) || std::isupper(static_cast<unsigned char>(*c))) return false;
  return true;
}

}  // namespace

// ------------------------------------------------------------ basics ----

TEST(ApiBasics, VersionAndStatusStrings) {
  const std::string version = std::to_string(SGTOPK_VERSION_MAJOR) + "." + std::to_string(SGTOPK_VERSION_MINOR) + "." +
                              std::to_string(SGTOPK_VERSION_PATCH);
  EXPECT_EQ(std::string(sgtopk_version_string()), version);
  for (int s = SGTOPK_OK; s <= SGTOPK_ERROR_INTERNAL; ++s) {
    const char* text = sgtopk_status_string(static_cast<sgtopk_status>(s));
    ASSERT_NE(text, nullptr);
    EXPECT_GT(std::strlen(text), 0u) << "status " << s;
  }
  EXPECT_STREQ(sgtopk_status_string(SGTOPK_OK), "ok");
}

// ------------------------------------------------- problem validation ----

TEST(ApiProblem, KZero) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.k = 0; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"K=0 is invalid: K must be in 1..8192"});
}

TEST(ApiProblem, KTooLarge) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.k = 8193; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"K=8193 is invalid: K must be in 1..8192"});
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.k = -1; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"K=-1 is invalid"});
}

TEST(ApiProblem, RowsZero) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.rows = 0; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"rows=0 is invalid"});
}

TEST(ApiProblem, WidthZeroOrTooWide) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.width = 0; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"width=0 is invalid"});
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.width = (int64_t{1} << 30) + 1; },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"width=1073741825 is invalid"});
}

TEST(ApiProblem, PitchSmallerThanWidth) {
  expect_rejected(
      [](sgtopk_problem& p, sgtopk_compile_options&) {
        p.width = 1024;
        p.pitch = 1000;
      },
      SGTOPK_ERROR_INVALID_ARGUMENT, {"pitch 1000 is smaller than width 1024"});
}

TEST(ApiProblem, OutPitchSmallerThanK) {
  expect_rejected(
      [](sgtopk_problem& p, sgtopk_compile_options&) {
        p.k = 2048;
        p.out_pitch = 2000;
      },
      SGTOPK_ERROR_INVALID_ARGUMENT, {"out_pitch 2000 is smaller than K=2048"});
}

// A pitch the row address arithmetic cannot carry used to compile, and with
// pitch 2^62 every row read row 0.
TEST(ApiProblem, MatrixSizesAreBounded) {
  for (const int64_t pitch : {INT64_MAX, int64_t{1} << 62, int64_t{1} << 46}) {
    SCOPED_TRACE(pitch);
    expect_rejected([&](sgtopk_problem& p, sgtopk_compile_options&) { p.pitch = pitch; },
                    SGTOPK_ERROR_INVALID_ARGUMENT, {"rows x pitch", "at most 2^46 elements"});
    expect_rejected([&](sgtopk_problem& p, sgtopk_compile_options&) { p.out_pitch = pitch; },
                    SGTOPK_ERROR_INVALID_ARGUMENT, {"rows x out_pitch", "at most 2^46 elements"});
  }
  // The bound is on the product: many rows at a moderate pitch, too.
  expect_rejected(
      [](sgtopk_problem& p, sgtopk_compile_options&) {
        p.rows = int64_t{1} << 30;
        p.width = int64_t{1} << 17;
      },
      SGTOPK_ERROR_INVALID_ARGUMENT, {"rows x pitch (1073741824 x 131072)"});
  // And the largest legal products are accepted.
  sgtopk_problem p = good_problem();
  p.rows = 4;
  p.pitch = (int64_t{1} << 46) / 4;
  p.out_pitch = (int64_t{1} << 46) / 4;
  EXPECT_NO_THROW(sgtopk::detail::validate_problem(&p));
}

TEST(ApiProblem, UnknownFlags) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.flags = SGTOPK_VALUES | (1u << 7); },
                  SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"flags 0x80", "not sgtopk flags",
                   "(known: SGTOPK_VALUES, SGTOPK_SORTED, SGTOPK_STARTS, SGTOPK_ROUTE_STATS, SGTOPK_INDEX_OFFSETS, "
                   "SGTOPK_PAGE_TABLE)"});
  // The first bit past SGTOPK_PAGE_TABLE is not a flag.
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.flags = SGTOPK_ROUTE_STATS | (1u << 6); },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"flags 0x40", "not sgtopk flags"});
}

// The fused index transform: one of the two, and the page fields only with
// the page table, in range.
TEST(ApiProblem, IndexTransformIsCheckedAtCompileTime) {
  const auto rejected = [](uint32_t flags, int32_t page_size, int64_t table_pitch, const std::string& needle) {
    expect_rejected(
        [=](sgtopk_problem& p, sgtopk_compile_options&) {
          p.flags = flags;
          p.page_size = page_size;
          p.page_table_pitch = table_pitch;
        },
        SGTOPK_ERROR_INVALID_ARGUMENT, {needle});
  };
  rejected(SGTOPK_INDEX_OFFSETS | SGTOPK_PAGE_TABLE, 64, 0,
           "SGTOPK_INDEX_OFFSETS and SGTOPK_PAGE_TABLE are both set: the output takes one index transform");
  rejected(0, 64, 0, "page_size=64 and page_table_pitch=0 are set without SGTOPK_PAGE_TABLE");
  rejected(SGTOPK_INDEX_OFFSETS, 0, 10, "page_size=0 and page_table_pitch=10 are set without SGTOPK_PAGE_TABLE");
  rejected(SGTOPK_PAGE_TABLE, 0, 0, "page_size=0 is invalid: SGTOPK_PAGE_TABLE needs a page size in 1..");
  rejected(SGTOPK_PAGE_TABLE, -4, 0, "page_size=-4 is invalid");
  // good_problem's width 12000 in pages of 64: 188 pages.
  rejected(SGTOPK_PAGE_TABLE, 64, 187, "page_table_pitch 187 is smaller than the 188 pages of a row of width 12000");
  for (const auto& [flags, page_size, table_pitch, text] :
       {std::tuple<uint32_t, int32_t, int64_t, const char*>{SGTOPK_INDEX_OFFSETS, 0, 0, "kIndexTransform=1"},
        {SGTOPK_PAGE_TABLE, 64, 0, "kPageTablePitch=188"},
        {SGTOPK_PAGE_TABLE, 7, 5000, "kPageTablePitch=5000"}}) {
    sgtopk_problem p = good_problem();
    p.flags = flags;
    p.page_size = page_size;
    p.page_table_pitch = table_pitch;
    const sgtopk_compile_options o = compile_only();
    sgtopk_plan plan = nullptr;
    ASSERT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
    sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
    ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK) << sgtopk_last_error();
    EXPECT_TRUE(contains(info.parameters, text)) << info.parameters;
    EXPECT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
  }
  // A caller built before the page fields passes the shorter struct: no transform.
  sgtopk_problem old = good_problem();
  old.struct_size = static_cast<uint32_t>(offsetof(sgtopk_problem, page_size));
  old.page_size = 99;  // past struct_size: never read
  EXPECT_EQ(sgtopk::detail::validate_problem(&old).page_size, 0);
}

TEST(ApiProblem, RouteStatsFlagIsAccepted) {
  EXPECT_EQ(SGTOPK_ROUTE_STATS, 1u << 3);
  EXPECT_EQ(SGTOPK_ROUTE_CANDIDATES, 5);
  EXPECT_EQ(SGTOPK_ROUTE_STAT_SLOTS, 11);  // routes, candidates, cycles per phase, the split finisher's form
  sgtopk_problem p = good_problem();
  p.flags = SGTOPK_VALUES | SGTOPK_ROUTE_STATS;
  const sgtopk_compile_options o = compile_only();
  sgtopk_plan plan = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK) << sgtopk_last_error();
  EXPECT_TRUE(contains(info.parameters, "kRouteStats=true")) << info.parameters;
  EXPECT_TRUE(contains(sgtopk_plan_text(plan), "+route_stats")) << sgtopk_plan_text(plan);
  EXPECT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
}

// sgtopk_plan_info.on_disk says whether the kernel's entry is in the disk
// cache (the test process caches under a fresh temporary directory); callers
// built before the field existed pass the shorter struct and keep working.
TEST(ApiProblem, PlanInfoSaysWhetherTheKernelIsOnDisk) {
  const sgtopk_problem p = good_problem();
  const sgtopk_compile_options o = compile_only();
  sgtopk_plan plan = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  info.on_disk = -7;
  ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK) << sgtopk_last_error();
  EXPECT_EQ(info.on_disk, 1);
  EXPECT_TRUE(contains(sgtopk_plan_text(plan), "on disk:   yes")) << sgtopk_plan_text(plan);

  sgtopk_plan_info older = SGTOPK_PLAN_INFO_INIT;
  older.struct_size = static_cast<uint32_t>(offsetof(sgtopk_plan_info, on_disk));
  older.on_disk = -7;  // past the caller's struct: never written
  ASSERT_EQ(sgtopk_plan_describe(plan, &older), SGTOPK_OK) << sgtopk_last_error();
  EXPECT_EQ(older.on_disk, -7);
  EXPECT_STREQ(older.cache_key, info.cache_key);
  EXPECT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
}

TEST(ApiProblem, BadDtype) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.dtype = enum_from_int<sgtopk_dtype>(7); },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"dtype=7 is invalid"});
}

TEST(ApiProblem, BadOperator) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.op = enum_from_int<sgtopk_operator>(9); },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"op=9"});
}

TEST(ApiProblem, AFilterFlagOnASelectProblem) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.flags = SGTOPK_FILTER_MASK; },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"SGTOPK_FILTER_MASK", "is a filter flag"});
}

TEST(ApiProblem, BadStructSize) {
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.struct_size = 0; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"problem.struct_size is 0", "SGTOPK_PROBLEM_INIT"});
  expect_rejected([](sgtopk_problem&, sgtopk_compile_options& o) { o.struct_size = 4; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"options.struct_size is 4", "SGTOPK_COMPILE_OPTIONS_INIT"});
}

TEST(ApiProblem, NullProblem) {
  sgtopk_compile_options o = compile_only();
  const Failure f = compile_failure(nullptr, &o);
  EXPECT_EQ(f.status, SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(f.out_plan_null);
  EXPECT_TRUE(contains(f.message, "problem is NULL")) << f.message;
}

TEST(ApiProblem, NullOutPlan) {
  const sgtopk_problem p = good_problem();
  const sgtopk_compile_options o = compile_only();
  EXPECT_EQ(sgtopk_compile(&p, &o, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "out_plan is NULL")) << sgtopk_last_error();
}

// ------------------------------------------------- options validation ----

TEST(ApiOptions, BadArch) {
  for (const char* arch : {"sm_9x", "compute_90", "sm_60", "sm_70", "sm_75", "sm_", "sm_90b", "sm_0090", "sm_090"}) {
    SCOPED_TRACE(arch);
    expect_rejected([&](sgtopk_problem&, sgtopk_compile_options& o) { o.arch = arch; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                    {std::string("arch '") + arch + "'"});
  }
  // Older than the templates need: refused up front, naming the minimum, with
  // no NVRTC run and no failure dump.
  for (const char* arch : {"sm_60", "sm_70", "sm_75"})
    expect_rejected([&](sgtopk_problem&, sgtopk_compile_options& o) { o.arch = arch; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                    {"needs sm_80 or newer"});
}

// An arch whose number does not fit an int used to escape as
// SGTOPK_ERROR_INTERNAL "internal error: stoi".
TEST(ApiOptions, AbsurdArchNumberIsAnInvalidArgument) {
  for (const char* arch : {"sm_99999999999", "sm_99999999999a", "sm_2147483648", "sm_", "sm_9x", "compute_90"}) {
    SCOPED_TRACE(arch);
    expect_rejected([&](sgtopk_problem&, sgtopk_compile_options& o) { o.arch = arch; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                    {std::string("arch '") + arch + "' is invalid", "sm_90"});
    EXPECT_FALSE(contains(sgtopk_last_error(), "internal")) << sgtopk_last_error();
  }
}

TEST(ApiOptions, ArchNumberParsing) {
  EXPECT_EQ(sgtopk::detail::arch_number("sm_90"), 90);
  EXPECT_EQ(sgtopk::detail::arch_number("sm_90a"), 90);
  EXPECT_EQ(sgtopk::detail::arch_number("sm_120"), 120);
  EXPECT_EQ(sgtopk::detail::arch_number("sm_2147483647"), 2147483647);  // INT_MAX parses; one more does not
  // "" reaches arch_number only as an empty policy default_arch (an empty
  // options.arch means "the fallback"), so it is checked here directly.
  for (const char* arch : {"", "sm_", "sm_9x", "sm_99999999999", "sm_2147483648", "compute_90", "sm_-90", "sm_ 90"}) {
    SCOPED_TRACE(arch);
    try {
      (void)sgtopk::detail::arch_number(arch);
      ADD_FAILURE() << "accepted";
    } catch (const sgtopk::detail::Error& e) {
      EXPECT_EQ(e.status(), SGTOPK_ERROR_INVALID_ARGUMENT) << e.what();
      EXPECT_TRUE(contains(e.what(), std::string("arch '") + arch + "' is invalid")) << e.what();
    }
  }
}

TEST(ApiOptions, UnknownFamily) {
  expect_rejected([](sgtopk_problem&, sgtopk_compile_options& o) { o.family = "no_such_family"; },
                  SGTOPK_ERROR_INVALID_ARGUMENT,
                  {"family 'no_such_family' is unknown", "(known: direct_exact, sampled, split, short_row, cluster)"});
}

TEST(ApiOptions, PolicyUnknownKey) {
  expect_rejected(
      [](sgtopk_problem&, sgtopk_compile_options& o) { o.policy_toml = "[select.direct]\nbogus_knob = 3\n"; },
      SGTOPK_ERROR_POLICY, {"bogus_knob", "<policy_toml>"});
}

TEST(ApiOptions, PolicyOutOfRange) {
  expect_rejected(
      [](sgtopk_problem&, sgtopk_compile_options& o) { o.policy_toml = "[select.direct]\nvector_bytes = 3\n"; },
      SGTOPK_ERROR_POLICY, {"select.direct.vector_bytes"});
}

TEST(ApiOptions, PolicyFileMissing) {
  expect_rejected(
      [](sgtopk_problem&, sgtopk_compile_options& o) { o.policy_file = "/nonexistent/sgtopk/policy.toml"; },
      SGTOPK_ERROR_POLICY, {"/nonexistent/sgtopk/policy.toml"});
}

TEST(ApiOptions, OwnWorkspaceNeedsADevice) {
  expect_rejected([](sgtopk_problem&, sgtopk_compile_options& o) { o.own_workspace = 1; },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"own_workspace needs a device"});
}

TEST(ApiOptions, DeviceWithoutDriver) {
  if (void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(handle);
    GTEST_SKIP() << "a CUDA driver is present: this test covers machines without one";
  }
  sgtopk_problem p = good_problem();
  sgtopk_compile_options o = SGTOPK_COMPILE_OPTIONS_INIT;
  o.device = 0;
  const Failure f = compile_failure(&p, &o);
  EXPECT_EQ(f.status, SGTOPK_ERROR_NO_DRIVER) << f.message;
  EXPECT_TRUE(f.out_plan_null);
  EXPECT_EQ(f.message.rfind("no CUDA driver", 0), 0u) << f.message;
}

// ------------------------------------------------------- last error ----

TEST(ApiLastError, ThreadLocalAndClearedBySuccess) {
  sgtopk_problem bad = good_problem();
  bad.k = 0;
  const sgtopk_compile_options o = compile_only();
  sgtopk_plan plan = nullptr;
  ASSERT_EQ(sgtopk_compile(&bad, &o, &plan), SGTOPK_ERROR_INVALID_ARGUMENT);
  ASSERT_TRUE(contains(sgtopk_last_error(), "K=0")) << sgtopk_last_error();

  std::string seen_in_thread = "unset", own_in_thread;
  std::thread t([&] {
    seen_in_thread = sgtopk_last_error();
    sgtopk_problem other = good_problem();
    other.width = 0;
    sgtopk_plan p2 = nullptr;
    sgtopk_compile(&other, &o, &p2);
    own_in_thread = sgtopk_last_error();
  });
  t.join();
  EXPECT_EQ(seen_in_thread, "") << "an error on one thread leaked into another";
  EXPECT_TRUE(contains(own_in_thread, "width=0")) << own_in_thread;
  // The other thread's failure did not overwrite this thread's message.
  EXPECT_TRUE(contains(sgtopk_last_error(), "K=0")) << sgtopk_last_error();

  // Any successful call clears it.
  EXPECT_EQ(sgtopk_plan_destroy(nullptr), SGTOPK_OK);
  EXPECT_STREQ(sgtopk_last_error(), "");
}

// ---------------------------------------------------- compile-only plan ----

TEST(ApiCompileOnly, DescribeTextAndRefusedLaunch) {
  // A failure first, so that we can see the successful compile clear it.
  sgtopk_problem bad = good_problem();
  bad.rows = 0;
  sgtopk_compile_options o = compile_only("sm_90");
  sgtopk_plan plan = nullptr;
  ASSERT_NE(sgtopk_compile(&bad, &o, &plan), SGTOPK_OK);

  sgtopk_problem p = good_problem();
  p.rows = 200;  // the direct family's shape: too wide for short_row, too many rows to split
  p.width = 20000;
  ASSERT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  ASSERT_NE(plan, nullptr);
  EXPECT_STREQ(sgtopk_last_error(), "");

  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK) << sgtopk_last_error();
  EXPECT_STREQ(info.family, "direct_exact");
  EXPECT_STREQ(info.arch, "sm_90");
  EXPECT_TRUE(is_hex32(info.cache_key)) << (info.cache_key ? info.cache_key : "(null)");
  ASSERT_NE(info.parameters, nullptr);
  EXPECT_TRUE(contains(info.parameters, "kK=2048")) << info.parameters;
  EXPECT_GT(info.grid[0], 0u);
  EXPECT_EQ(info.grid[1], 1u);
  EXPECT_EQ(info.grid[2], 1u);
  EXPECT_GT(info.block[0], 0u);
  EXPECT_GT(info.dynamic_smem_bytes, 0u);
  EXPECT_GT(info.workspace_bytes, 0u);
  EXPECT_GE(info.from_cache, 0);
  EXPECT_LE(info.from_cache, 2);
  EXPECT_EQ(info.load_ms, 0.0) << "a compile-only plan loads nothing";
  if (info.from_cache == 0) {
    EXPECT_GT(info.compile_ms, 0.0);
  }

  size_t bytes = 0;
  ASSERT_EQ(sgtopk_workspace_size(plan, &bytes), SGTOPK_OK);
  EXPECT_EQ(bytes, info.workspace_bytes);

  const std::string text = sgtopk_plan_text(plan);
  EXPECT_TRUE(contains(text, "direct_exact")) << text;
  EXPECT_TRUE(contains(text, "[select.direct]")) << text;
  EXPECT_TRUE(contains(text, info.cache_key)) << text;

  // Launching a compile-only plan is refused in the caller's terms.
  sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;
  args.scores = 0x10000;
  args.indices = 0x20000;
  args.workspace = 0x30000;
  EXPECT_EQ(sgtopk_select(plan, &args, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "without a device")) << sgtopk_last_error();

  sgtopk_graph graph = reinterpret_cast<sgtopk_graph>(static_cast<uintptr_t>(0x1234));
  EXPECT_EQ(sgtopk_graph_create(plan, &args, &graph), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "without a device")) << sgtopk_last_error();
  EXPECT_EQ(graph, nullptr);

  // The same plan again comes from the memory cache under the same key.
  sgtopk_plan again = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, &o, &again), SGTOPK_OK) << sgtopk_last_error();
  sgtopk_plan_info info2 = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(again, &info2), SGTOPK_OK);
  EXPECT_STREQ(info2.cache_key, info.cache_key);
  EXPECT_EQ(info2.from_cache, 1);
  EXPECT_EQ(info2.compile_ms, 0.0);

  // NULL options: compile-only for the policy's default architecture (sm_90).
  sgtopk_plan defaulted = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, nullptr, &defaulted), SGTOPK_OK) << sgtopk_last_error();
  sgtopk_plan_info info3 = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(defaulted, &info3), SGTOPK_OK);
  EXPECT_STREQ(info3.arch, "sm_90");
  EXPECT_STREQ(info3.cache_key, info.cache_key);

  EXPECT_EQ(sgtopk_plan_destroy(defaulted), SGTOPK_OK);
  EXPECT_EQ(sgtopk_plan_destroy(again), SGTOPK_OK);
  EXPECT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
}

TEST(ApiCompileOnly, DescribeNeedsAnInitializedInfo) {
  const sgtopk_problem p = good_problem();
  const sgtopk_compile_options o = compile_only();
  sgtopk_plan plan = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  EXPECT_EQ(sgtopk_plan_describe(plan, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  info.struct_size = 8;
  EXPECT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "SGTOPK_PLAN_INFO_INIT")) << sgtopk_last_error();
  EXPECT_EQ(sgtopk_workspace_size(plan, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
}

// ------------------------------------------------------- NULL handles ----

TEST(ApiNullHandles, CleanErrors) {
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  EXPECT_EQ(sgtopk_plan_describe(nullptr, &info), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "plan is NULL")) << sgtopk_last_error();

  size_t bytes = 7;
  EXPECT_EQ(sgtopk_workspace_size(nullptr, &bytes), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "plan is NULL")) << sgtopk_last_error();

  sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;
  args.scores = 0x10000;
  args.indices = 0x20000;
  EXPECT_EQ(sgtopk_select(nullptr, &args, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "plan is NULL")) << sgtopk_last_error();

  sgtopk_graph graph = nullptr;
  EXPECT_EQ(sgtopk_graph_create(nullptr, &args, &graph), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(sgtopk_graph_update(nullptr, &args), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sgtopk_graph_launch(nullptr, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);

  EXPECT_STREQ(sgtopk_plan_text(nullptr), "");

  EXPECT_EQ(sgtopk_plan_destroy(nullptr), SGTOPK_OK);
  EXPECT_STREQ(sgtopk_last_error(), "");
  EXPECT_EQ(sgtopk_graph_destroy(nullptr), SGTOPK_OK);
}

// ------------------------------------------------ select args (no GPU) ----
//
// sgtopk_select refuses a compile-only plan before it looks at the args, so
// these call the check it runs (make_select_params) on a plan made without a
// device.

namespace {

sgtopk::detail::Plan plan_with_flags(uint32_t flags) {
  sgtopk_problem p = good_problem();
  p.flags = flags;
  const sgtopk::detail::Policy policy = sgtopk::detail::Policy::defaults();
  return sgtopk::detail::make_plan(sgtopk::detail::validate_problem(&p), policy, sgtopk::detail::resolve_target(-1, "sm_90", "sm_90"));
}

sgtopk_select_args good_args() {
  sgtopk_select_args a = SGTOPK_SELECT_ARGS_INIT;
  a.scores = 0x10000;
  a.indices = 0x20000;
  a.workspace = 0x30000;
  return a;
}

// Expects make_select_params to reject `args` with every needle in the message.
void expect_args_rejected(const sgtopk::detail::Plan& plan, const sgtopk_select_args& args,
                          const std::vector<std::string>& needles) {
  try {
    (void)sgtopk::detail::make_select_params(plan, &args, 0);
    ADD_FAILURE() << "args accepted; wanted: " << needles.front();
  } catch (const sgtopk::detail::Error& e) {
    EXPECT_EQ(e.status(), SGTOPK_ERROR_INVALID_ARGUMENT) << e.what();
    for (const auto& needle : needles) EXPECT_TRUE(contains(e.what(), needle)) << "message: " << e.what() << "\nwanted: " << needle;
  }
}

}  // namespace

TEST(ApiSelectArgs, InitMacroCoversEveryField) {
  const sgtopk_select_args a = SGTOPK_SELECT_ARGS_INIT;
  EXPECT_EQ(a.struct_size, sizeof(sgtopk_select_args));
  EXPECT_EQ(a.route_stats, 0u);
  EXPECT_EQ(a.index_offsets, 0u);
  EXPECT_EQ(a.page_table, 0u);
  EXPECT_EQ(offsetof(sgtopk_select_args, page_table) + sizeof(sgtopk_devptr), sizeof(sgtopk_select_args))
      << "page_table is the last field (fields are only ever appended)";
}

TEST(ApiSelectArgs, TransformBuffersRequiredExactlyWhenTheirFlagIsSet) {
  const sgtopk::detail::Plan plain = plan_with_flags(0);
  const sgtopk::detail::Plan offsets = plan_with_flags(SGTOPK_INDEX_OFFSETS);
  sgtopk_problem p = good_problem();
  p.flags = SGTOPK_PAGE_TABLE;
  p.page_size = 16;
  const sgtopk::detail::Plan pages = sgtopk::detail::make_plan(
      sgtopk::detail::validate_problem(&p), sgtopk::detail::Policy::defaults(),
      sgtopk::detail::resolve_target(-1, "sm_90", "sm_90"));
  sgtopk_select_args a = good_args();
  expect_args_rejected(offsets, a, {"args.index_offsets is 0 but the plan was compiled with SGTOPK_INDEX_OFFSETS"});
  expect_args_rejected(pages, a, {"args.page_table is 0 but the plan was compiled with SGTOPK_PAGE_TABLE"});
  a.index_offsets = 0x50000;
  EXPECT_EQ(reinterpret_cast<uint64_t>(sgtopk::detail::make_select_params(offsets, &a, 0).index_offsets), 0x50000u);
  expect_args_rejected(plain, a, {"args.index_offsets is set but the plan was compiled without SGTOPK_INDEX_OFFSETS"});
  a.index_offsets = 0x50002;
  expect_args_rejected(offsets, a, {"args.index_offsets is not 4-byte aligned"});
  a.index_offsets = 0;
  a.page_table = 0x60000;
  EXPECT_EQ(reinterpret_cast<uint64_t>(sgtopk::detail::make_select_params(pages, &a, 0).page_table), 0x60000u);
  expect_args_rejected(plain, a, {"args.page_table is set but the plan was compiled without SGTOPK_PAGE_TABLE"});
  // A caller built before the transform passes the shorter struct: never read.
  a.struct_size = static_cast<uint32_t>(offsetof(sgtopk_select_args, index_offsets));
  EXPECT_EQ(reinterpret_cast<uint64_t>(sgtopk::detail::make_select_params(plain, &a, 0).page_table), 0u);
  expect_args_rejected(pages, a, {"args.page_table is 0 but the plan was compiled with SGTOPK_PAGE_TABLE"});
}

TEST(ApiSelectArgs, RouteStatsRequiredExactlyWhenTheFlagIsSet) {
  const sgtopk::detail::Plan without = plan_with_flags(0);
  const sgtopk::detail::Plan with = plan_with_flags(SGTOPK_ROUTE_STATS);
  ASSERT_FALSE(without.problem.route_stats);
  ASSERT_TRUE(with.problem.route_stats);

  sgtopk_select_args a = good_args();
  EXPECT_EQ(reinterpret_cast<uint64_t>(sgtopk::detail::make_select_params(without, &a, 0).route_stats), 0u);
  expect_args_rejected(with, a, {"args.route_stats is 0 but the plan was compiled with SGTOPK_ROUTE_STATS"});

  a.route_stats = 0x40000;
  EXPECT_EQ(reinterpret_cast<uint64_t>(sgtopk::detail::make_select_params(with, &a, 0).route_stats), 0x40000u);
  expect_args_rejected(without, a, {"args.route_stats is set but the plan was compiled without SGTOPK_ROUTE_STATS"});

  for (uint64_t misaligned : {0x40004ull, 0x40001ull}) {
    a.route_stats = misaligned;
    expect_args_rejected(with, a, {"args.route_stats is not 8-byte aligned"});
  }
}

TEST(ApiSelectArgs, TheStructBeforeRouteStatsIsStillAccepted) {
  const sgtopk::detail::Plan without = plan_with_flags(0);
  const sgtopk::detail::Plan with = plan_with_flags(SGTOPK_ROUTE_STATS);
  sgtopk_select_args a = good_args();
  a.struct_size = static_cast<uint32_t>(offsetof(sgtopk_select_args, route_stats));
  a.route_stats = 0x40004;  // past struct_size: an older caller's garbage, never read
  const sgtopk::detail::DeviceSelectParams params = sgtopk::detail::make_select_params(without, &a, 0);
  EXPECT_EQ(reinterpret_cast<uint64_t>(params.route_stats), 0u);
  EXPECT_EQ(reinterpret_cast<uint64_t>(params.scores), a.scores);
  EXPECT_EQ(reinterpret_cast<uint64_t>(params.indices), a.indices);
  EXPECT_EQ(reinterpret_cast<uint64_t>(params.workspace), a.workspace);
  EXPECT_EQ(params.rows, static_cast<uint64_t>(good_problem().rows));
  // An older caller cannot pass the buffer a route-stats plan needs.
  expect_args_rejected(with, a, {"args.route_stats is 0 but the plan was compiled with SGTOPK_ROUTE_STATS"});
  // Anything shorter is not a sgtopk_select_args.
  a.struct_size -= 8;
  expect_args_rejected(without, a, {"args.struct_size is " + std::to_string(a.struct_size), "SGTOPK_SELECT_ARGS_INIT"});
}

// Every pointer the kernel dereferences is checked for its element alignment:
// a misaligned one would fault on the device and poison the CUDA context, so
// it is refused up front (INVALID_ARGUMENT, naming the argument, its address
// and the alignment). 0 stays "not passed" for the optional ones.
TEST(ApiSelectArgs, EveryDevicePointerIsCheckedForAlignment) {
  const sgtopk::detail::Plan plain = plan_with_flags(0);
  const sgtopk::detail::Plan full = plan_with_flags(SGTOPK_VALUES | SGTOPK_STARTS | SGTOPK_ROUTE_STATS);

  sgtopk_select_args ok = good_args();
  ok.lengths = 0x50000;
  ok.live_rows = 0x60000;
  const sgtopk::detail::DeviceSelectParams plain_params = sgtopk::detail::make_select_params(plain, &ok, 0);
  EXPECT_EQ(reinterpret_cast<uint64_t>(plain_params.lengths), ok.lengths);
  EXPECT_EQ(reinterpret_cast<uint64_t>(plain_params.live_rows), ok.live_rows);
  ok.values = 0x70000;
  ok.starts = 0x80000;
  ok.route_stats = 0x90000;
  const sgtopk::detail::DeviceSelectParams full_params = sgtopk::detail::make_select_params(full, &ok, 0);
  EXPECT_EQ(reinterpret_cast<uint64_t>(full_params.values), ok.values);
  EXPECT_EQ(reinterpret_cast<uint64_t>(full_params.starts), ok.starts);
  // 4-byte aligned but not 8 or 16: enough for the int32/float buffers.
  sgtopk_select_args four = ok;
  four.lengths = 0x50004;
  four.live_rows = 0x60004;
  four.values = 0x7000c;
  four.starts = 0x80004;
  EXPECT_NO_THROW((void)sgtopk::detail::make_select_params(full, &four, 0));

  struct Field {
    const char* name;
    sgtopk_devptr sgtopk_select_args::*member;
    uint64_t alignment;
    bool needs_full_plan;
  };
  const Field fields[] = {
      {"scores", &sgtopk_select_args::scores, 4, false},
      {"indices", &sgtopk_select_args::indices, 4, false},
      {"lengths", &sgtopk_select_args::lengths, 4, false},
      {"live_rows", &sgtopk_select_args::live_rows, 4, false},
      {"values", &sgtopk_select_args::values, 4, true},
      {"starts", &sgtopk_select_args::starts, 4, true},
      {"workspace", &sgtopk_select_args::workspace, 16, false},
      {"route_stats", &sgtopk_select_args::route_stats, 8, true},
  };
  for (const Field& f : fields) {
    for (uint64_t offset : {uint64_t{1}, uint64_t{2}, f.alignment / 2}) {
      if (offset == 0 || offset >= f.alignment) continue;
      SCOPED_TRACE(std::string(f.name) + " + " + std::to_string(offset));
      sgtopk_select_args bad = ok;
      if (!f.needs_full_plan) {
        bad.values = bad.starts = bad.route_stats = 0;
      }
      const uint64_t address = (bad.*f.member == 0 ? 0xa0000 : bad.*f.member) + offset;
      bad.*f.member = address;
      char hex[32];
      std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(address));
      expect_args_rejected(f.needs_full_plan ? full : plain, bad,
                           {"args." + std::string(f.name) + " is not " + std::to_string(f.alignment) + "-byte aligned",
                            hex});
    }
  }
}

// The review's case: lengths at base + 2 bytes was accepted and the kernel
// faulted. Now refused, on the plain plan and through the whole check.
TEST(ApiSelectArgs, MisalignedLengthsIsRefusedBeforeTheLaunch) {
  const sgtopk::detail::Plan plan = plan_with_flags(0);
  sgtopk_select_args a = good_args();
  a.lengths = 0x50002;
  expect_args_rejected(plan, a, {"args.lengths", "0x50002", "4-byte aligned"});
  a.lengths = 0;  // "every row has width"
  EXPECT_NO_THROW((void)sgtopk::detail::make_select_params(plan, &a, 0));
}

TEST(Api, RouteStatNamesComeFromTheOneList) {
  std::set<std::string> names;
  for (int slot = 0; slot < SGTOPK_ROUTE_STAT_SLOTS; ++slot) {
    const char* name = sgtopk_route_stat_name(slot);
    ASSERT_NE(name, nullptr) << slot;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(SGTOPK_ROUTE_STAT_SLOTS));  // one name per slot
  EXPECT_STREQ(sgtopk_route_stat_name(SGTOPK_ROUTE_SHORT), "short");
  EXPECT_STREQ(sgtopk_route_stat_name(SGTOPK_ROUTE_PRIMARY), "primary");
  EXPECT_STREQ(sgtopk_route_stat_name(SGTOPK_ROUTE_CANDIDATES), "candidates");
  EXPECT_STREQ(sgtopk_route_stat_name(SGTOPK_CYCLES_REFINEMENT), "cycles_refinement");
  EXPECT_EQ(sgtopk_route_stat_name(-1), nullptr);
  EXPECT_EQ(sgtopk_route_stat_name(SGTOPK_ROUTE_STAT_SLOTS), nullptr);
  // The kernels' enum is the same list (templates/sgtopk/abi.h).
  static_assert(static_cast<int>(sgtopk::kRouteStatSlots) == static_cast<int>(SGTOPK_ROUTE_STAT_SLOTS));
  static_assert(static_cast<int>(sgtopk::kRouteCandidates) == static_cast<int>(SGTOPK_ROUTE_CANDIDATES));
  static_assert(static_cast<int>(sgtopk::kCyclesRefinement) == static_cast<int>(SGTOPK_CYCLES_REFINEMENT));
}

// ------------------------------------------------------------ the filter ----

namespace {

namespace detail = sgtopk::detail;

sgtopk_problem filter_problem() {
  sgtopk_problem p = SGTOPK_PROBLEM_INIT;
  p.op = SGTOPK_OP_FILTER;
  p.rows = 8;
  p.width = 32000;
  return p;
}

void expect_filter_rejected(const std::function<void(sgtopk_problem&)>& mutate, sgtopk_status status,
                            const std::vector<std::string>& needles) {
  expect_rejected([&](sgtopk_problem& p, sgtopk_compile_options&) { mutate(p); }, status, needles, filter_problem());
}

// The filter_row family's planning: a few rows would take filter_split.
const detail::Policy& no_split() {
  static const detail::Policy policy = detail::parse_policy_string("filter.split.min_segments = 0\n");
  return policy;
}

detail::Plan filter_plan(int64_t rows = 8, int64_t width = 32000, int64_t pitch = 0, sgtopk_dtype dtype = SGTOPK_F32,
                         const detail::Policy& policy = no_split()) {
  sgtopk_problem p = filter_problem();
  p.rows = rows;
  p.width = width;
  p.pitch = pitch;
  p.dtype = dtype;
  return detail::make_plan(detail::validate_problem(&p), policy, detail::resolve_target(-1, "sm_90", "sm_90"));
}

// A plan's own workspace, as the C API passes it (filter_split plans need one).
constexpr uint64_t kOwnWorkspace = 0x7000000;

sgtopk_filter_args good_filter_args() {
  sgtopk_filter_args a = SGTOPK_FILTER_ARGS_INIT;
  a.logits = 0x1000000;
  a.out = 0x1000000;  // in place
  return a;
}

void expect_filter_args_rejected(const detail::Plan& plan, const sgtopk_filter_args& args,
                                 const std::vector<std::string>& needles) {
  try {
    (void)detail::make_filter_params(plan, &args, kOwnWorkspace);
    ADD_FAILURE() << "args accepted; wanted: " << needles.front();
  } catch (const detail::Error& e) {
    EXPECT_EQ(e.status(), SGTOPK_ERROR_INVALID_ARGUMENT) << e.what();
    for (const auto& needle : needles) EXPECT_TRUE(contains(e.what(), needle)) << "message: " << e.what() << "\nwanted: " << needle;
  }
}

}  // namespace

TEST(ApiFilterProblem, ShapesOutsideTheTemplatesLimits) {
  expect_filter_rejected([](sgtopk_problem& p) { p.rows = 0; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"rows=0 is invalid", "batch capacity", "1..2147483647"});
  expect_filter_rejected([](sgtopk_problem& p) { p.rows = int64_t{1} << 31; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"rows=2147483648 is invalid"});
  expect_filter_rejected([](sgtopk_problem& p) { p.width = 0; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"width=0 is invalid", "vocabulary", "1..8388608"});
  expect_filter_rejected([](sgtopk_problem& p) { p.width = (int64_t{1} << 23) + 1; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"width=8388609 is invalid"});
  expect_filter_rejected([](sgtopk_problem& p) { p.pitch = 31999; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"pitch 31999 is smaller than width 32000"});
  expect_filter_rejected(
      [](sgtopk_problem& p) {
        p.rows = int64_t{1} << 30;
        p.width = int64_t{1} << 23;
      },
      SGTOPK_ERROR_INVALID_ARGUMENT, {"rows x pitch", "logits matrix", "2^46"});
  // The limits themselves are accepted.
  for (const auto& [rows, width] : {std::pair<int64_t, int64_t>{1, 1}, {(int64_t{1} << 23), 1},
                                    {(int64_t{1} << 31) - 1, 1}, {1, int64_t{1} << 23}}) {
    sgtopk_problem p = filter_problem();
    p.rows = rows;
    p.width = width;
    const detail::Problem v = detail::validate_problem(&p);
    EXPECT_EQ(v.op, SGTOPK_OP_FILTER);
    EXPECT_EQ(v.pitch, width);
    EXPECT_TRUE(v.filter_mask);
  }
}

TEST(ApiFilterProblem, KIsTheCandidateCapacity) {
  expect_filter_rejected([](sgtopk_problem& p) { p.k = -1; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"K=-1 is invalid without SGTOPK_FILTER_CANDIDATES", "capacity of its candidate output"});
  expect_filter_rejected([](sgtopk_problem& p) { p.k = 50; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"K=50 is invalid without SGTOPK_FILTER_CANDIDATES", "0 otherwise"});
  for (int k : {0, -3, 8193}) {
    expect_filter_rejected(
        [k](sgtopk_problem& p) {
          p.flags = SGTOPK_FILTER_CANDIDATES;
          p.k = k;
        },
        SGTOPK_ERROR_INVALID_ARGUMENT,
        {"K=" + std::to_string(k) + " is invalid: with SGTOPK_FILTER_CANDIDATES", "must be in 1..8192"});
  }
  expect_filter_rejected(
      [](sgtopk_problem& p) {
        p.flags = SGTOPK_FILTER_CANDIDATES;
        p.k = 64;
        p.out_pitch = 63;
      },
      SGTOPK_ERROR_INVALID_ARGUMENT, {"out_pitch 63 is smaller than K=64", "candidate capacity"});
  expect_filter_rejected(
      [](sgtopk_problem& p) {
        p.flags = SGTOPK_FILTER_CANDIDATES;
        p.k = 64;
        p.rows = int64_t{1} << 30;
        p.width = 8;
        p.out_pitch = int64_t{1} << 20;
      },
      SGTOPK_ERROR_INVALID_ARGUMENT, {"rows x out_pitch", "candidate matrices"});
  sgtopk_problem p = filter_problem();
  p.flags = SGTOPK_FILTER_CANDIDATES;
  p.k = 64;
  detail::Problem v = detail::validate_problem(&p);
  EXPECT_EQ(v.k, 64);
  EXPECT_EQ(v.out_pitch, 64);  // 0: K
  EXPECT_TRUE(v.filter_candidates);
  EXPECT_FALSE(v.filter_mask);  // asked for without the mask: the logits are only read
  EXPECT_FALSE(v.filter_sample);
  EXPECT_TRUE(contains(detail::to_string(v), "+candidates(K=64 out_pitch=64)")) << detail::to_string(v);
  p.k = 8192;
  p.out_pitch = 9000;
  p.flags = SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE | SGTOPK_FILTER_MASK;
  v = detail::validate_problem(&p);
  EXPECT_EQ(v.out_pitch, 9000);
  EXPECT_TRUE(v.filter_mask && v.filter_candidates && v.filter_sample);
  p.flags = SGTOPK_FILTER_SAMPLE;
  p.k = 0;
  p.out_pitch = 0;
  v = detail::validate_problem(&p);
  EXPECT_TRUE(v.filter_sample && !v.filter_mask && !v.filter_candidates);
  EXPECT_EQ(v.k, 0);
  EXPECT_TRUE(contains(detail::to_string(v), "+sample")) << detail::to_string(v);
}

TEST(ApiFilterProblem, TakesF32Bf16AndF16) {
  for (sgtopk_dtype dtype : {SGTOPK_F32, SGTOPK_BF16, SGTOPK_F16}) {
    sgtopk_problem p = filter_problem();
    p.dtype = dtype;
    EXPECT_EQ(detail::validate_problem(&p).dtype, dtype);
  }
  expect_filter_rejected([](sgtopk_problem& p) { p.dtype = enum_from_int<sgtopk_dtype>(7); },
                         SGTOPK_ERROR_INVALID_ARGUMENT, {"dtype=7 is invalid", "SGTOPK_BF16"});
  expect_filter_rejected(
      [](sgtopk_problem& p) {
        p.dtype = SGTOPK_BF16;
        p.rows = 0;
      },
      SGTOPK_ERROR_INVALID_ARGUMENT, {"rows=0 is invalid"});
  // Select still takes float32 only.
  expect_rejected([](sgtopk_problem& p, sgtopk_compile_options&) { p.dtype = SGTOPK_BF16; },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"dtype=1 is invalid", "float32"});
}

TEST(ApiFilterProblem, FlagsAndSelectOnlyFields) {
  expect_filter_rejected([](sgtopk_problem& p) { p.flags = SGTOPK_VALUES | SGTOPK_FILTER_MASK; },
                         SGTOPK_ERROR_INVALID_ARGUMENT, {"flags 0x1 are select flags", "SGTOPK_FILTER_MASK"});
  expect_filter_rejected([](sgtopk_problem& p) { p.flags = 1u << 20; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"flags 0x100000 are not sgtopk flags"});
  expect_filter_rejected([](sgtopk_problem& p) { p.out_pitch = 32000; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"out_pitch=32000", "without SGTOPK_FILTER_CANDIDATES", "leave it 0"});
  expect_filter_rejected([](sgtopk_problem& p) { p.page_size = 16; }, SGTOPK_ERROR_INVALID_ARGUMENT,
                         {"page_size=16", "leave them 0"});
  for (uint32_t flags : {0u, SGTOPK_FILTER_MASK}) {
    sgtopk_problem p = filter_problem();
    p.flags = flags;
    EXPECT_TRUE(detail::validate_problem(&p).filter_mask) << flags;
  }
}

TEST(ApiFilterProblem, FamiliesAreChosenPerOperator) {
  expect_rejected([](sgtopk_problem&, sgtopk_compile_options& o) { o.family = "sampled"; },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"family 'sampled' is a select family", "(known: filter_row, filter_split)"},
                  filter_problem());
  expect_rejected([](sgtopk_problem&, sgtopk_compile_options& o) { o.family = "filter_row"; },
                  SGTOPK_ERROR_INVALID_ARGUMENT, {"family 'filter_row' is a filter family"});
  EXPECT_EQ(detail::filter_families(), (std::vector<std::string>{"filter_row", "filter_split"}));
}

TEST(ApiFilterPlan, FollowsThePolicyAndTheTemplate) {
  const detail::Plan plan = filter_plan(8, 32000);
  EXPECT_EQ(plan.family, "filter_row");
  EXPECT_EQ(plan.entry, "sgtopk_filter_row");
  EXPECT_EQ(plan.agent_header, "sgtopk/agent/filter_row.cuh");
  EXPECT_EQ(plan.block, 1024u);
  EXPECT_EQ(plan.grid, 8u);  // fewer rows than CTAs the GPU holds: one CTA a row
  EXPECT_EQ(plan.dynamic_smem_bytes, sgtopk::filter_row_shared_bytes(sgtopk::kFilterCandidates));
  EXPECT_EQ(plan.workspace_bytes, 0u);
  EXPECT_EQ(plan.constant("kThreads"), "1024");
  EXPECT_EQ(plan.constant("kDtype"), "0");
  EXPECT_EQ(plan.constant("kSampleSize"), "2048");
  EXPECT_EQ(plan.constant("kTopPSampleSize"), "1024");
  EXPECT_EQ(plan.constant("kSampleSigmas"), "4");
  EXPECT_EQ(plan.constant("kLoadsInFlight"), "2");
  EXPECT_EQ(plan.constant("kOutputs"), std::to_string(sgtopk::kFilterOutMask));  // the mask alone
  EXPECT_EQ(filter_plan(8, 32000, 0, SGTOPK_BF16).constant("kDtype"), std::to_string(sgtopk::kFilterBf16));
  EXPECT_EQ(filter_plan(8, 32000, 0, SGTOPK_F16).constant("kDtype"), std::to_string(sgtopk::kFilterF16));
  EXPECT_TRUE(contains(plan.reason, "filter.few_rows_block_threads 1024 threads (8 rows within")) << plan.reason;
  EXPECT_TRUE(contains(plan.reason, "filter.sample_size 2048")) << plan.reason;
  // One CTA of 1024 an SM (64 registers a thread fill the register file).
  EXPECT_EQ(plan.min_blocks_per_sm, 1u);
  // Many rows: filter.block_threads (512) with 2 loads in flight, two CTAs an
  // SM, which take every grid-th row (filter.many_rows_per_sm 0: no
  // many-rows CTA by default).
  const detail::Target sm90 = detail::resolve_target(-1, "sm_90", "sm_90");
  const detail::Plan by_default = filter_plan(100000, 128256);
  EXPECT_EQ(by_default.block, 512u);
  EXPECT_EQ(by_default.constant("kLoadsInFlight"), "2");
  EXPECT_EQ(by_default.constant("kCandidates"), "8192");
  EXPECT_EQ(by_default.grid, static_cast<unsigned>(sm90.sm_count * 2));
  EXPECT_EQ(by_default.min_blocks_per_sm, 2u);
  EXPECT_TRUE(contains(by_default.reason, "filter.block_threads 512 threads (100000 rows past")) << by_default.reason;
  EXPECT_FALSE(contains(by_default.reason, "many_rows")) << by_default.reason;
  // From filter.many_rows_per_sm (here 4) rows an SM, the mask only:
  // filter.many_rows_block_threads (256) with 2 loads in flight and a
  // candidate buffer of filter.many_rows_candidate_buffer (4032) keys, four
  // CTAs an SM.
  const detail::Policy many_policy =
      detail::parse_policy_string("filter.split.min_segments = 0\nfilter.many_rows_per_sm = 4\n");
  const detail::Plan many = filter_plan(100000, 128256, 0, SGTOPK_F32, many_policy);
  EXPECT_EQ(many.block, 256u);
  EXPECT_EQ(many.constant("kLoadsInFlight"), "2");
  EXPECT_EQ(many.constant("kCandidates"), "4032");
  EXPECT_EQ(many.grid, static_cast<unsigned>(sm90.sm_count * 4));
  EXPECT_EQ(many.min_blocks_per_sm, 4u);
  EXPECT_TRUE(contains(many.reason, "filter.many_rows_block_threads 256 threads (100000 rows from")) << many.reason;
  // Between: filter.block_threads (512) and filter.candidate_buffer (8192), two CTAs an SM.
  const detail::Plan rows = filter_plan(4 * sm90.sm_count - 1, 128256, 0, SGTOPK_F32, many_policy);
  EXPECT_EQ(rows.block, 512u);
  EXPECT_EQ(rows.constant("kCandidates"), "8192");
  EXPECT_EQ(rows.grid, static_cast<unsigned>(sm90.sm_count * 2));
  EXPECT_EQ(rows.min_blocks_per_sm, 2u);
  const std::string sms = std::to_string(sm90.sm_count) + " SMs";
  EXPECT_TRUE(contains(rows.reason, "filter.block_threads 512 threads (" + std::to_string(4 * sm90.sm_count - 1) +
                                        " rows past " + sms + " x filter.few_rows_per_sm 1, below " + sms +
                                        " x filter.many_rows_per_sm 4)"))
      << rows.reason;
  // The boundaries: rows up to filter.few_rows_per_sm x the SMs take the
  // few-rows CTA, from filter.many_rows_per_sm x the SMs the many-rows one.
  EXPECT_EQ(filter_plan(sm90.sm_count, 128256, 0, SGTOPK_F32, many_policy).block, 1024u);
  EXPECT_EQ(filter_plan(sm90.sm_count + 1, 128256, 0, SGTOPK_F32, many_policy).block, 512u);
  EXPECT_EQ(filter_plan(4 * sm90.sm_count, 128256, 0, SGTOPK_F32, many_policy).block, 256u);
  // The candidate and sample outputs keep the CTA of block_threads (they sort an 8192-key buffer).
  sgtopk_problem with_outputs = filter_problem();
  with_outputs.rows = 100000;
  with_outputs.width = 128256;
  with_outputs.flags = SGTOPK_FILTER_MASK | SGTOPK_FILTER_SAMPLE;
  EXPECT_EQ(detail::make_plan(detail::validate_problem(&with_outputs), many_policy, sm90).block, 512u);
  sgtopk_problem p = filter_problem();
  const detail::Plan small = detail::make_plan(
      detail::validate_problem(&p),
      detail::parse_policy_string("filter.few_rows_block_threads = 256\nfilter.split.min_segments = 0\n"), sm90);
  EXPECT_EQ(small.block, 256u);
  EXPECT_EQ(small.constant("kThreads"), "256");
  // Blocks of 256 with many rows: sm_90's 228 KB of shared memory holds 2
  // CTAs with their candidates (keys and indices), not the 8 its threads would.
  p.rows = 100000;
  const detail::Plan small_many = detail::make_plan(
      detail::validate_problem(&p), detail::parse_policy_string("filter.block_threads = 256\n"), sm90);
  EXPECT_EQ(small_many.grid, static_cast<unsigned>(sm90.sm_count * 2));
  EXPECT_EQ(small_many.min_blocks_per_sm, 2u);  // the launch bounds hold it to 128 registers a thread
  // The sample output at 1024 threads: top-k's sample is one key a thread
  // (a second step spilled), said in the plan; at 512 threads, the policy's.
  sgtopk_problem sampled = filter_problem();
  sampled.flags = SGTOPK_FILTER_SAMPLE;
  sampled.rows = 130;
  sampled.width = 128256;
  const detail::Plan few_sampled = detail::make_plan(detail::validate_problem(&sampled), no_split(), sm90);
  EXPECT_EQ(few_sampled.block, 1024u);
  EXPECT_EQ(few_sampled.constant("kSampleSize"), "1024");
  EXPECT_EQ(few_sampled.constant("kTopPSampleSize"), "1024");
  ASSERT_EQ(few_sampled.derived.size(), 1u);
  EXPECT_TRUE(contains(few_sampled.derived[0], "top-k's sample 1024, one key a thread")) << few_sampled.derived[0];
  sampled.rows = 100000;
  const detail::Plan many_sampled = detail::make_plan(detail::validate_problem(&sampled), no_split(), sm90);
  EXPECT_EQ(many_sampled.block, 512u);
  EXPECT_EQ(many_sampled.constant("kSampleSize"), "2048");
  EXPECT_TRUE(many_sampled.derived.empty());
}

TEST(ApiFilterCompileOnly, CompilesHitsTheCacheAndRefusesTheOtherOperatorsCalls) {
  const sgtopk_problem p = filter_problem();
  sgtopk_compile_options o = compile_only("sm_90");
  o.policy_toml = "filter.split.min_segments = 0\n";  // filter_row: 8 rows would take filter_split
  sgtopk_plan plan = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, &o, &plan), SGTOPK_OK) << sgtopk_last_error();
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(plan, &info), SGTOPK_OK) << sgtopk_last_error();
  EXPECT_STREQ(info.family, "filter_row");
  EXPECT_TRUE(is_hex32(info.cache_key));
  EXPECT_EQ(info.block[0], 1024u);
  EXPECT_EQ(info.workspace_bytes, 0u);
  EXPECT_TRUE(contains(info.parameters, "kThreads=1024")) << info.parameters;
  const std::string text = sgtopk_plan_text(plan);
  for (const char* needle : {"problem:   filter rows=8 width=32000 pitch=32000 dtype=f32 +mask", "family:    filter_row",
                             "sgtopk/agent/filter_row.cuh", "entry sgtopk_filter_row", "[filter]"})
    EXPECT_TRUE(contains(text, needle)) << needle << "\n" << text;

  // The same problem again: the memory cache, the same key.
  sgtopk_plan again = nullptr;
  ASSERT_EQ(sgtopk_compile(&p, &o, &again), SGTOPK_OK) << sgtopk_last_error();
  sgtopk_plan_info info2 = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(again, &info2), SGTOPK_OK);
  EXPECT_STREQ(info2.cache_key, info.cache_key);
  EXPECT_EQ(info2.from_cache, 1);

  // A select plan of the same rows and width has its own cache entry.
  sgtopk_problem sp = good_problem();
  sp.rows = p.rows;
  sp.width = p.width;
  sgtopk_plan select = nullptr;
  ASSERT_EQ(sgtopk_compile(&sp, &o, &select), SGTOPK_OK) << sgtopk_last_error();
  sgtopk_plan_info select_info = SGTOPK_PLAN_INFO_INIT;
  ASSERT_EQ(sgtopk_plan_describe(select, &select_info), SGTOPK_OK);
  EXPECT_STRNE(select_info.cache_key, info.cache_key);

  // Each operator's calls refuse the other's plans, before anything else
  // (here: before "compiled without a device").
  sgtopk_filter_args fa = good_filter_args();
  sgtopk_select_args sa = SGTOPK_SELECT_ARGS_INIT;
  sa.scores = 0x10000;
  sa.indices = 0x20000;
  EXPECT_EQ(sgtopk_select(plan, &sa, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "sgtopk_select takes a select plan")) << sgtopk_last_error();
  EXPECT_TRUE(contains(sgtopk_last_error(), "use sgtopk_filter")) << sgtopk_last_error();
  EXPECT_EQ(sgtopk_filter(select, &fa, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "sgtopk_filter takes a filter plan")) << sgtopk_last_error();
  EXPECT_TRUE(contains(sgtopk_last_error(), "use sgtopk_select")) << sgtopk_last_error();
  sgtopk_graph graph = reinterpret_cast<sgtopk_graph>(static_cast<uintptr_t>(0x1234));
  EXPECT_EQ(sgtopk_graph_create(plan, &sa, &graph), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "sgtopk_filter_graph_create")) << sgtopk_last_error();
  EXPECT_EQ(graph, nullptr);
  graph = reinterpret_cast<sgtopk_graph>(static_cast<uintptr_t>(0x1234));
  EXPECT_EQ(sgtopk_filter_graph_create(select, &fa, &graph), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "sgtopk_graph_create")) << sgtopk_last_error();
  EXPECT_EQ(graph, nullptr);

  // The right call on a compile-only plan: refused for want of a device.
  EXPECT_EQ(sgtopk_filter(plan, &fa, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "without a device")) << sgtopk_last_error();
  EXPECT_EQ(sgtopk_filter_graph_create(plan, &fa, &graph), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "without a device")) << sgtopk_last_error();
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(sgtopk_filter(nullptr, &fa, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sgtopk_last_error(), "plan is NULL")) << sgtopk_last_error();
  EXPECT_EQ(sgtopk_filter_graph_update(nullptr, &fa), SGTOPK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sgtopk_filter_graph_create(plan, &fa, nullptr), SGTOPK_ERROR_INVALID_ARGUMENT);

  // Each dtype is its own kernel: its own cache entry, named in the plan.
  std::vector<std::string> keys{info.cache_key};
  for (const auto& [dtype, name] : {std::pair{SGTOPK_BF16, "dtype=bf16"}, std::pair{SGTOPK_F16, "dtype=f16"}}) {
    sgtopk_problem dp = p;
    dp.dtype = dtype;
    sgtopk_plan typed = nullptr;
    ASSERT_EQ(sgtopk_compile(&dp, &o, &typed), SGTOPK_OK) << sgtopk_last_error();
    sgtopk_plan_info typed_info = SGTOPK_PLAN_INFO_INIT;
    ASSERT_EQ(sgtopk_plan_describe(typed, &typed_info), SGTOPK_OK);
    for (const std::string& key : keys) EXPECT_NE(key, typed_info.cache_key) << name;
    keys.push_back(typed_info.cache_key);
    EXPECT_TRUE(contains(typed_info.parameters, "kDtype=" + std::to_string(static_cast<int>(dtype))))
        << typed_info.parameters;
    EXPECT_TRUE(contains(sgtopk_plan_text(typed), name)) << sgtopk_plan_text(typed);
    EXPECT_EQ(sgtopk_plan_destroy(typed), SGTOPK_OK);
  }

  EXPECT_EQ(sgtopk_plan_destroy(select), SGTOPK_OK);
  EXPECT_EQ(sgtopk_plan_destroy(again), SGTOPK_OK);
  EXPECT_EQ(sgtopk_plan_destroy(plan), SGTOPK_OK);
}

TEST(ApiFilterArgs, InitMacroMeansNoFiltering) {
  const sgtopk_filter_args a = SGTOPK_FILTER_ARGS_INIT;
  EXPECT_EQ(a.struct_size, sizeof(sgtopk_filter_args));
  EXPECT_EQ(a.logits, 0u);
  EXPECT_EQ(a.out, 0u);
  EXPECT_EQ(a.top_k, 0u);
  EXPECT_EQ(a.top_p, 0u);
  EXPECT_EQ(a.temperature, 0u);
  EXPECT_EQ(a.live_rows, 0u);
  EXPECT_EQ(a.top_k_value, 0);
  EXPECT_EQ(a.top_p_value, 1.0f);
  EXPECT_EQ(a.temperature_value, 1.0f);
  EXPECT_TRUE(std::isinf(a.mask_value) && a.mask_value < 0.0f);
  EXPECT_EQ(a.candidate_indices, 0u);
  EXPECT_EQ(a.candidate_logits, 0u);
  EXPECT_EQ(a.candidate_probs, 0u);
  EXPECT_EQ(a.candidate_counts, 0u);
  EXPECT_EQ(a.sampled_tokens, 0u);
  EXPECT_EQ(a.seeds, 0u);
  EXPECT_EQ(a.seed_value, 0u);
  EXPECT_EQ(a.workspace, 0u);
  // Fields are only ever appended: the outputs' fields follow mask_value (its
  // struct's end before them, padding included), then workspace, the last.
  EXPECT_EQ((offsetof(sgtopk_filter_args, mask_value) + sizeof(float) + 7) / 8 * 8,
            offsetof(sgtopk_filter_args, candidate_indices));
  EXPECT_EQ(offsetof(sgtopk_filter_args, seed_value) + sizeof(uint64_t), offsetof(sgtopk_filter_args, workspace));
  EXPECT_EQ(offsetof(sgtopk_filter_args, workspace) + sizeof(sgtopk_devptr), sizeof(sgtopk_filter_args))
      << "workspace is the last field (fields are only ever appended)";
}

TEST(ApiFilterArgs, PointersAndValuesArePackedAsGiven) {
  const detail::Plan plan = filter_plan(8, 1000, 1024);
  sgtopk_filter_args a = good_filter_args();
  a.out = 0x2000000;
  a.top_k = 0x3000000;
  a.top_p = 0x4000000;
  a.temperature = 0x5000000;
  a.live_rows = 0x6000004;
  a.top_k_value = 50;
  a.top_p_value = 0.9f;
  a.temperature_value = 0.7f;
  a.mask_value = -1.0f;
  const detail::DeviceFilterParams f = detail::make_filter_params(plan, &a, kOwnWorkspace);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.logits), a.logits);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.out), a.out);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.top_k), a.top_k);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.top_p), a.top_p);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.temperature), a.temperature);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.live_rows), a.live_rows);
  EXPECT_EQ(f.rows, 8);
  EXPECT_EQ(f.width, 1000);
  EXPECT_EQ(f.pitch, 1024);
  EXPECT_EQ(f.top_k_value, 50);
  EXPECT_EQ(f.top_p_value, 0.9f);
  EXPECT_EQ(f.temperature_value, 0.7f);
  EXPECT_EQ(f.mask_value, -1.0f);
  // In place: out == logits.
  a.out = a.logits;
  EXPECT_EQ(reinterpret_cast<uint64_t>(detail::make_filter_params(plan, &a, kOwnWorkspace).out), a.logits);
}

TEST(ApiFilterArgs, BadArgumentsInTheCallersTerms) {
  const detail::Plan plan = filter_plan(8, 1000, 1024);
  try {
    (void)detail::make_filter_params(plan, nullptr, kOwnWorkspace);
    ADD_FAILURE() << "NULL args accepted";
  } catch (const detail::Error& e) {
    EXPECT_TRUE(contains(e.what(), "args is NULL")) << e.what();
  }
  sgtopk_filter_args a = good_filter_args();
  a.struct_size = 8;
  expect_filter_args_rejected(plan, a, {"args.struct_size is 8", "SGTOPK_FILTER_ARGS_INIT", "from before candidate_indices"});
  // A caller built before the candidate and sample outputs: accepted, those fields read as 0.
  a = good_filter_args();
  a.struct_size = offsetof(sgtopk_filter_args, candidate_indices);
  a.candidate_indices = 0x7000000;  // past the struct the caller knows: never read
  EXPECT_EQ(detail::make_filter_params(plan, &a, kOwnWorkspace).candidate_indices, nullptr);
  a = good_filter_args();
  a.logits = 0;
  expect_filter_args_rejected(plan, a, {"args.logits is 0"});
  a = good_filter_args();
  a.out = 0;
  expect_filter_args_rejected(plan, a, {"args.out is 0", "in place"});
  struct Field {
    const char* name;
    sgtopk_devptr sgtopk_filter_args::*member;
  };
  for (const Field& field : {Field{"logits", &sgtopk_filter_args::logits}, Field{"out", &sgtopk_filter_args::out},
                             Field{"top_k", &sgtopk_filter_args::top_k}, Field{"top_p", &sgtopk_filter_args::top_p},
                             Field{"temperature", &sgtopk_filter_args::temperature},
                             Field{"live_rows", &sgtopk_filter_args::live_rows}}) {
    a = good_filter_args();
    a.out = 0x8000000;
    a.*field.member = 0x9000002;
    expect_filter_args_rejected(plan, a, {std::string("args.") + field.name + " is not 4-byte aligned", "0x9000002"});
  }
  // Overlapping without being the same matrix: the last row's last token
  // ((8 - 1) x 1024 + 1000 floats) is the first that does not overlap.
  a = good_filter_args();
  a.out = a.logits + 4;
  expect_filter_args_rejected(plan, a, {"args.out overlaps args.logits"});
  a.out = a.logits - 4;
  expect_filter_args_rejected(plan, a, {"args.out overlaps args.logits"});
  a.out = a.logits + (7 * 1024 + 1000) * 4 - 4;
  expect_filter_args_rejected(plan, a, {"args.out overlaps args.logits"});
  a.out = a.logits + (7 * 1024 + 1000) * 4;
  EXPECT_NO_THROW((void)detail::make_filter_params(plan, &a, kOwnWorkspace));
}

namespace {

detail::Plan filter_outputs_plan(uint32_t flags, int k = 0, int64_t out_pitch = 0) {
  sgtopk_problem p = filter_problem();
  p.rows = 8;
  p.width = 1000;
  p.flags = flags;
  p.k = k;
  p.out_pitch = out_pitch;
  return detail::make_plan(detail::validate_problem(&p), detail::Policy::defaults(),
                           detail::resolve_target(-1, "sm_90", "sm_90"));
}

}  // namespace

TEST(ApiFilterArgs, CandidateAndSampleOutputs) {
  const detail::Plan plan = filter_outputs_plan(SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE, 64, 70);
  sgtopk_filter_args a = SGTOPK_FILTER_ARGS_INIT;
  a.logits = 0x1000000;
  a.candidate_indices = 0x2000000;
  a.candidate_logits = 0x3000000;
  a.candidate_probs = 0x4000000;
  a.candidate_counts = 0x5000000;
  a.sampled_tokens = 0x6000000;
  a.seeds = 0x7000000;
  a.seed_value = 42;
  const detail::DeviceFilterParams f = detail::make_filter_params(plan, &a, kOwnWorkspace);
  EXPECT_EQ(f.out, nullptr);  // no mask: the logits are only read
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.candidate_indices), a.candidate_indices);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.candidate_logits), a.candidate_logits);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.candidate_probs), a.candidate_probs);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.candidate_counts), a.candidate_counts);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.sampled_tokens), a.sampled_tokens);
  EXPECT_EQ(reinterpret_cast<uint64_t>(f.seeds), a.seeds);
  EXPECT_EQ(f.seed_value, 42u);
  EXPECT_EQ(f.candidate_capacity, 64);
  EXPECT_EQ(f.candidate_pitch, 70);
  // Logits and probabilities are optional, and so are the seeds.
  a.candidate_logits = a.candidate_probs = a.seeds = 0;
  EXPECT_NO_THROW((void)detail::make_filter_params(plan, &a, kOwnWorkspace));
}

TEST(ApiFilterArgs, CandidateAndSampleOutputsInTheCallersTerms) {
  const detail::Plan both = filter_outputs_plan(SGTOPK_FILTER_CANDIDATES | SGTOPK_FILTER_SAMPLE, 64);
  auto good = [] {
    sgtopk_filter_args a = SGTOPK_FILTER_ARGS_INIT;
    a.logits = 0x1000000;
    a.candidate_indices = 0x2000000;
    a.candidate_counts = 0x5000000;
    a.sampled_tokens = 0x6000000;
    return a;
  };
  sgtopk_filter_args a = good();
  a.candidate_indices = 0;
  expect_filter_args_rejected(both, a, {"args.candidate_indices is 0", "compiled with SGTOPK_FILTER_CANDIDATES"});
  a = good();
  a.candidate_counts = 0;
  expect_filter_args_rejected(both, a, {"args.candidate_counts is 0", "compiled with SGTOPK_FILTER_CANDIDATES"});
  a = good();
  a.sampled_tokens = 0;
  expect_filter_args_rejected(both, a, {"args.sampled_tokens is 0", "compiled with SGTOPK_FILTER_SAMPLE"});
  a = good();
  a.out = 0x8000000;
  expect_filter_args_rejected(both, a, {"args.out is set", "without SGTOPK_FILTER_MASK"});
  struct Field {
    const char* name;
    sgtopk_devptr sgtopk_filter_args::*member;
    int alignment;
  };
  for (const Field& field : {Field{"candidate_indices", &sgtopk_filter_args::candidate_indices, 4},
                             Field{"candidate_logits", &sgtopk_filter_args::candidate_logits, 4},
                             Field{"candidate_probs", &sgtopk_filter_args::candidate_probs, 4},
                             Field{"candidate_counts", &sgtopk_filter_args::candidate_counts, 4},
                             Field{"sampled_tokens", &sgtopk_filter_args::sampled_tokens, 4},
                             Field{"seeds", &sgtopk_filter_args::seeds, 8}}) {
    a = good();
    a.*field.member = 0x9000004 + (field.alignment == 8 ? 0 : -2);
    expect_filter_args_rejected(both, a, {std::string("args.") + field.name + " is not " +
                                          std::to_string(field.alignment) + "-byte aligned"});
  }
  // Outputs the plan was not compiled for.
  const detail::Plan mask = filter_outputs_plan(0);
  for (const Field& field : {Field{"candidate_indices", &sgtopk_filter_args::candidate_indices, 4},
                             Field{"candidate_logits", &sgtopk_filter_args::candidate_logits, 4},
                             Field{"candidate_probs", &sgtopk_filter_args::candidate_probs, 4},
                             Field{"candidate_counts", &sgtopk_filter_args::candidate_counts, 4}}) {
    a = good_filter_args();
    a.*field.member = 0x9000000;
    expect_filter_args_rejected(mask, a, {std::string("args.") + field.name + " is set",
                                          "without SGTOPK_FILTER_CANDIDATES"});
  }
  a = good_filter_args();
  a.sampled_tokens = 0x9000000;
  expect_filter_args_rejected(mask, a, {"args.sampled_tokens is set", "without SGTOPK_FILTER_SAMPLE"});
  a = good_filter_args();
  a.seeds = 0x9000000;
  expect_filter_args_rejected(mask, a, {"args.seeds is set", "without SGTOPK_FILTER_SAMPLE"});
  // The mask with the others: out is required again.
  const detail::Plan all = filter_outputs_plan(SGTOPK_FILTER_MASK | SGTOPK_FILTER_SAMPLE);
  a = good_filter_args();
  a.out = 0;
  a.sampled_tokens = 0x6000000;
  expect_filter_args_rejected(all, a, {"args.out is 0"});
}

TEST(ApiFilterArgs, SixteenBitLogitsNeedTwoByteAlignmentAndOverlapInTheirBytes) {
  for (sgtopk_dtype dtype : {SGTOPK_BF16, SGTOPK_F16}) {
    const detail::Plan plan = filter_plan(8, 1000, 1024, dtype);
    sgtopk_filter_args a = good_filter_args();
    a.logits = 0x1000002;  // 2-byte aligned: enough
    a.out = 0x2000006;
    EXPECT_NO_THROW((void)detail::make_filter_params(plan, &a, kOwnWorkspace));
    a.logits = 0x1000001;
    expect_filter_args_rejected(plan, a, {"args.logits is not 2-byte aligned", "0x1000001"});
    a = good_filter_args();
    a.out = 0x2000003;
    expect_filter_args_rejected(plan, a, {"args.out is not 2-byte aligned"});
    // The matrix is (8 - 1) x 1024 + 1000 elements of 2 bytes.
    a = good_filter_args();
    a.out = a.logits + (7 * 1024 + 1000) * 2 - 2;
    expect_filter_args_rejected(plan, a, {"args.out overlaps args.logits"});
    a.out = a.logits + (7 * 1024 + 1000) * 2;
    EXPECT_NO_THROW((void)detail::make_filter_params(plan, &a, kOwnWorkspace));
  }
}

// A filter_split plan's workspace: the caller's (args.workspace) or the
// plan's own; neither is refused in the caller's terms, as is a misaligned
// one; a caller built before the field (the shorter struct) gets the plan's
// own; a filter_row plan needs none.
TEST(ApiFilterArgs, TheSplitFamilysWorkspace) {
  const detail::Plan split = filter_plan(1, 128256, 0, SGTOPK_F32, detail::Policy::defaults());
  ASSERT_EQ(split.family, "filter_split");
  ASSERT_GT(split.workspace_bytes, 0u);
  sgtopk_filter_args a = good_filter_args();
  try {
    (void)detail::make_filter_params(split, &a, 0);
    ADD_FAILURE() << "a split plan launched without a workspace";
  } catch (const detail::Error& e) {
    EXPECT_TRUE(contains(e.what(), "args.workspace is 0 and the plan owns none")) << e.what();
    EXPECT_TRUE(contains(e.what(), std::to_string(split.workspace_bytes) + " bytes")) << e.what();
  }
  EXPECT_EQ(reinterpret_cast<uint64_t>(detail::make_filter_params(split, &a, kOwnWorkspace).workspace), kOwnWorkspace);
  a.workspace = 0x9000000;
  EXPECT_EQ(reinterpret_cast<uint64_t>(detail::make_filter_params(split, &a, kOwnWorkspace).workspace), a.workspace);
  a.workspace = 0x9000008;
  expect_filter_args_rejected(split, a, {"args.workspace is not 16-byte aligned"});
  a.struct_size = offsetof(sgtopk_filter_args, workspace);  // built before the field: its bytes are not read
  EXPECT_EQ(reinterpret_cast<uint64_t>(detail::make_filter_params(split, &a, kOwnWorkspace).workspace), kOwnWorkspace);
  const detail::Plan row = filter_plan(8, 1000);
  ASSERT_EQ(row.family, "filter_row");
  a = good_filter_args();
  EXPECT_NO_THROW((void)detail::make_filter_params(row, &a, 0));
}
