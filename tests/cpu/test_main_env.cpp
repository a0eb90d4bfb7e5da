// Process-wide test environment of sgtopk_cpu_tests: the kernel cache and the
// dump directory of this process live in a fresh temporary directory, never in
// the user's ~/.cache/sgtopk.
//
// The global kernel cache is built once per process from knobs(), so the
// environment must be set before anything in the library runs. A global
// object's constructor sets the variables (before main), and a GoogleTest
// Environment re-reads them with reload_knobs() at the start of
// RUN_ALL_TESTS (after every static initializer, including the library's own
// knob table, has run) and removes the directory at the end
// (SGTOPK_TEST_KEEP_TMP=1 keeps it for inspection).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <system_error>

#include "runtime/knobs.h"

namespace {

namespace fs = std::filesystem;

class TempCacheEnvironment : public ::testing::Environment {
 public:
  explicit TempCacheEnvironment(fs::path root) : root_(std::move(root)) {}

  void SetUp() override {
    std::error_code ec;
    fs::create_directories(root_, ec);
    sgtopk::detail::reload_knobs();
  }

  void TearDown() override {
    if (root_.empty()) return;
    if (const char* keep = std::getenv("SGTOPK_TEST_KEEP_TMP"); keep && *keep && std::string(keep) != "0") return;
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

 private:
  fs::path root_;
};

struct InstallTempCache {
  InstallTempCache() {
    // Only a name here: the directory is created in SetUp, so that a run that
    // never reaches RUN_ALL_TESTS (--gtest_list_tests, as test discovery does
    // at build time) leaves nothing behind.
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::ostringstream name;
    name << "sgtopk_tests_" << ::getpid() << "_" << std::hex << std::random_device{}() << std::random_device{}();
    const fs::path root = base / name.str();
    ::setenv("SGTOPK_CACHE_DIR", (root / "cache").c_str(), 1);
    ::setenv("SGTOPK_DUMP_DIR", (root / "dumps").c_str(), 1);
    // GoogleTest allows registering environments from a global initializer;
    // it takes ownership.
    ::testing::AddGlobalTestEnvironment(new TempCacheEnvironment(root));
  }
};

const InstallTempCache g_install_temp_cache;

}  // namespace
