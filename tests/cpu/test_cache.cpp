// The cache module: key, on-disk entries (verification, atomic publish,
// degraded modes) and the single-flight memory cache, across threads and
// processes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache_key.h"
#include "cache/disk_cache.h"
#include "cache/kernel_cache.h"
#include "cache/maintenance.h"
#include "runtime/error.h"
#include "runtime/knobs.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace sgtopk;
using namespace sgtopk::detail;
using sgtopk::testing::files_under;

namespace {

CacheKeyInputs sample_inputs() {
  CacheKeyInputs in;
  in.source = "#include <sgtopk/common.cuh>\nextern \"C\" __global__ void k() {}\n";
  in.headers = {{"sgtopk/common.cuh", "// common\n"}, {"sgtopk/radix.cuh", "// radix\n"}};
  in.options = {"--std=c++17", "-default-device"};
  in.target = "sm_90";
  in.nvrtc_version = "13.0";
  in.library_version = "0.1.0";
  return in;
}

std::vector<char> make_payload(size_t size, unsigned seed) {
  std::vector<char> p(size);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : p) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return p;
}

int count_warnings(const std::string& text) {
  int n = 0;
  for (size_t pos = text.find("sgtopk: warning:"); pos != std::string::npos; pos = text.find("sgtopk: warning:", pos + 1))
    ++n;
  return n;
}

std::vector<char> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

void write_file(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A compile function that counts its calls.
struct CountingCompile {
  std::vector<char> payload;
  std::atomic<int> calls{0};
  std::chrono::milliseconds delay{0};
  std::function<std::vector<char>()> fn() {
    return [this] {
      ++calls;
      if (delay.count() > 0) std::this_thread::sleep_for(delay);
      return payload;
    };
  }
};

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (knobs().verbose < 1) {  // the tests count warnings
      ::setenv("SGTOPK_VERBOSE", "1", 1);
      reload_knobs();
    }
    std::string templ = (fs::path(::testing::TempDir()) / "sgtopk_cache_XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr) << "mkdtemp failed";
    root_ = templ;
    dir_ = root_ / "cache";
    inputs_ = sample_inputs();
    key_ = make_cache_key(inputs_);
    manifest_ = make_manifest(inputs_);
  }

  void TearDown() override {
    // Undo any chmod so the tree can be removed.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_directory()) ::chmod(it->path().c_str(), 0755);
    ::chmod(root_.c_str(), 0755);
    fs::remove_all(root_, ec);
  }

  // Publishes a valid entry for key_, then damages it with `corrupt` and checks
  // that a fresh process-like cache reports it once, removes it and rebuilds it.
  void expect_rebuilt(const std::function<void(const fs::path&)>& corrupt, const std::string& reason,
                      const std::string& load_manifest_override = {}) {
    const std::vector<char> good = make_payload(4096, 7);
    const fs::path entry = DiskCache(dir_, false).entry_path(key_);
    DiskCache(dir_, false).store(key_, manifest_, good);
    ASSERT_TRUE(fs::exists(entry));
    corrupt(entry);
    const std::string& manifest = load_manifest_override.empty() ? manifest_ : load_manifest_override;

    // Detection and removal, through the disk cache alone.
    {
      ::testing::internal::CaptureStderr();
      auto loaded = DiskCache(dir_, false).load(key_, manifest);
      const std::string err = ::testing::internal::GetCapturedStderr();
      EXPECT_FALSE(loaded.has_value());
      EXPECT_FALSE(fs::exists(entry)) << "bad entry was not removed";
      EXPECT_EQ(count_warnings(err), 1) << err;
      EXPECT_NE(err.find(entry.string()), std::string::npos) << "warning does not name the file: " << err;
      EXPECT_NE(err.find(reason), std::string::npos) << "expected reason '" << reason << "' in: " << err;
    }

    // The whole path: detected, recompiled, republished, one warning.
    DiskCache(dir_, false).store(key_, manifest_, good);
    corrupt(entry);
    CountingCompile c{make_payload(4096, 7)};
    ::testing::internal::CaptureStderr();
    KernelCache kc(DiskCache(dir_, false));
    CachedBinary r = kc.get_or_compile(key_, manifest, c.fn());
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.source, CacheSource::compiled);
    EXPECT_EQ(c.calls.load(), 1);
    EXPECT_EQ(*r.cubin, c.payload);
    EXPECT_EQ(count_warnings(err), 1) << err;

    ::testing::internal::CaptureStderr();
    auto reloaded = DiskCache(dir_, false).load(key_, manifest);
    EXPECT_EQ(count_warnings(::testing::internal::GetCapturedStderr()), 0);
    ASSERT_TRUE(reloaded.has_value()) << "rebuilt entry does not load";
    EXPECT_EQ(*reloaded, c.payload);
  }

  fs::path root_, dir_;
  CacheKeyInputs inputs_;
  CacheKey key_;
  std::string manifest_;
};

// ---------------------------------------------------------------------------
// Key and manifest

TEST(CacheKeyTest, StableAndHexFormatted) {
  const CacheKey a = make_cache_key(sample_inputs());
  const CacheKey b = make_cache_key(sample_inputs());
  EXPECT_EQ(a, b);
  const std::string hex = a.hex();
  ASSERT_EQ(hex.size(), 32u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << hex;
  EXPECT_EQ(make_manifest(sample_inputs()), make_manifest(sample_inputs()));
}

TEST(CacheKeyTest, ChangesWhenAnyInputChanges) {
  std::vector<std::pair<std::string, std::function<void(CacheKeyInputs&)>>> mutations = {
      {"source", [](CacheKeyInputs& in) { in.source += " "; }},
      {"header 0 text", [](CacheKeyInputs& in) { in.headers[0].second += "x"; }},
      {"header 1 text", [](CacheKeyInputs& in) { in.headers[1].second = "// radix v2\n"; }},
      {"header 0 name", [](CacheKeyInputs& in) { in.headers[0].first = "sgtopk/common2.cuh"; }},
      {"header added", [](CacheKeyInputs& in) { in.headers.emplace_back("sgtopk/extra.cuh", ""); }},
      {"header removed", [](CacheKeyInputs& in) { in.headers.pop_back(); }},
      {"option changed", [](CacheKeyInputs& in) { in.options[0] = "--std=c++20"; }},
      {"option added", [](CacheKeyInputs& in) { in.options.push_back("-lineinfo"); }},
      {"option removed", [](CacheKeyInputs& in) { in.options.pop_back(); }},
      {"options reordered", [](CacheKeyInputs& in) { std::swap(in.options[0], in.options[1]); }},
      {"target", [](CacheKeyInputs& in) { in.target = "sm_90a"; }},
      {"nvrtc version", [](CacheKeyInputs& in) { in.nvrtc_version = "13.1"; }},
      {"library version", [](CacheKeyInputs& in) { in.library_version = "0.1.1"; }},
  };
  const CacheKey base = make_cache_key(sample_inputs());
  const std::string base_manifest = make_manifest(sample_inputs());
  std::set<std::string> seen{base.hex()};
  for (const auto& [what, mutate] : mutations) {
    CacheKeyInputs in = sample_inputs();
    mutate(in);
    const CacheKey k = make_cache_key(in);
    EXPECT_NE(k, base) << what;
    EXPECT_TRUE(seen.insert(k.hex()).second) << what << " collides with another mutation";
    EXPECT_NE(make_manifest(in), base_manifest) << "manifest does not reflect: " << what;
    EXPECT_EQ(make_cache_key(in), k) << what << " is not stable";
  }
}

TEST(CacheKeyTest, SerializationIsUnambiguous) {
  // Bytes moved across a field boundary must change the key.
  CacheKeyInputs a = sample_inputs(), b = sample_inputs();
  a.target = "sm_9";
  a.nvrtc_version = "013.0";
  b.target = "sm_90";
  b.nvrtc_version = "13.0";
  EXPECT_NE(make_cache_key(a), make_cache_key(b));

  a = sample_inputs();
  b = sample_inputs();
  a.options = {"-a -b"};
  b.options = {"-a", "-b"};
  EXPECT_NE(make_cache_key(a), make_cache_key(b));

  a = sample_inputs();
  b = sample_inputs();
  a.headers = {{"h", "xy"}};
  b.headers = {{"hx", "y"}};
  EXPECT_NE(make_cache_key(a), make_cache_key(b));
}

TEST(CacheKeyTest, ManifestContents) {
  const std::string m = make_manifest(sample_inputs());
  for (const char* needle : {"format_version=1\n", "target=sm_90\n", "nvrtc_version=13.0\n", "library_version=0.1.0\n",
                             "option=--std=c++17\n", "option=-default-device\n", "source_xxh3=",
                             "header sgtopk/common.cuh=", "header sgtopk/radix.cuh="})
    EXPECT_NE(m.find(needle), std::string::npos) << "missing '" << needle << "' in:\n" << m;
  EXPECT_EQ(m.find("__global__"), std::string::npos) << "manifest should hold hashes, not source text";
}

// ---------------------------------------------------------------------------
// Disk entries

TEST_F(CacheTest, EntryLayoutAndFormat) {
  DiskCache disk(dir_, false);
  ASSERT_TRUE(disk.enabled());
  const fs::path entry = disk.entry_path(key_);
  const std::string hex = key_.hex();
  EXPECT_EQ(entry, dir_ / hex.substr(0, 2) / (hex + ".sgtopkbin"));

  const std::vector<char> payload = make_payload(1000, 1);
  disk.store(key_, manifest_, payload);
  const std::vector<char> bytes = read_file(entry);
  ASSERT_EQ(bytes.size(), 40 + manifest_.size() + payload.size());
  EXPECT_EQ(std::string(bytes.data(), 8), std::string("SGTOPKC\0", 8));
  EXPECT_EQ(std::string(bytes.data() + 40, manifest_.size()), manifest_);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), bytes.begin() + 40 + static_cast<long>(manifest_.size())));
  auto loaded = disk.load(key_, manifest_);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, payload);
}

TEST_F(CacheTest, EmptyPayloadIsNeverPublished) {
  DiskCache disk(dir_, false);
  disk.store(key_, manifest_, {});
  EXPECT_FALSE(fs::exists(disk.entry_path(key_)));

  KernelCache kc(DiskCache(dir_, false));
  EXPECT_THROW(kc.get_or_compile(key_, manifest_, [] { return std::vector<char>{}; }), sgtopk::detail::Error);
  EXPECT_FALSE(fs::exists(disk.entry_path(key_)));
  EXPECT_EQ(kc.stats().failed, 1u);
}

TEST_F(CacheTest, MissThenHitInAnotherInstance) {
  CountingCompile first{make_payload(8192, 3)};
  {
    KernelCache kc(DiskCache(dir_, false));
    CachedBinary r = kc.get_or_compile(key_, manifest_, first.fn());
    EXPECT_EQ(r.source, CacheSource::compiled);
    EXPECT_GE(r.compile_ms, 0.0);
    EXPECT_EQ(*r.cubin, first.payload);
    EXPECT_EQ(kc.stats().compiled, 1u);
  }
  EXPECT_EQ(first.calls.load(), 1);

  // A second instance is what another process sees: the disk entry.
  CountingCompile second{make_payload(8192, 3)};
  KernelCache kc(DiskCache(dir_, false));
  CachedBinary r = kc.get_or_compile(key_, manifest_, second.fn());
  EXPECT_EQ(r.source, CacheSource::disk);
  EXPECT_EQ(second.calls.load(), 0);
  EXPECT_EQ(*r.cubin, first.payload);
  EXPECT_EQ(kc.stats().disk_hits, 1u);

  // ... and then remembers it in memory.
  CachedBinary again = kc.get_or_compile(key_, manifest_, second.fn());
  EXPECT_EQ(again.source, CacheSource::memory);
  EXPECT_EQ(again.cubin, r.cubin);
  EXPECT_EQ(second.calls.load(), 0);
}

TEST_F(CacheTest, MemoryHit) {
  CountingCompile c{make_payload(100, 4)};
  KernelCache kc(DiskCache(dir_, false));
  CachedBinary a = kc.get_or_compile(key_, manifest_, c.fn());
  CachedBinary b = kc.get_or_compile(key_, manifest_, c.fn());
  EXPECT_EQ(a.source, CacheSource::compiled);
  EXPECT_EQ(b.source, CacheSource::memory);
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(c.calls.load(), 1);
  EXPECT_TRUE(a.on_disk);  // stored before the call returned
  EXPECT_TRUE(b.on_disk);
  EXPECT_TRUE(fs::exists(kc.disk().entry_path(key_)));
  const KernelCache::Stats s = kc.stats();
  EXPECT_EQ(s.compiled, 1u);
  EXPECT_EQ(s.memory_hits, 1u);
  EXPECT_EQ(s.disk_hits, 0u);
  EXPECT_EQ(s.store_failures, 0u);
}

TEST_F(CacheTest, DifferentKeysAreIndependent) {
  CacheKeyInputs other = inputs_;
  other.target = "sm_80";
  CountingCompile a{make_payload(64, 1)}, b{make_payload(64, 2)};
  KernelCache kc(DiskCache(dir_, false));
  EXPECT_EQ(*kc.get_or_compile(key_, manifest_, a.fn()).cubin, a.payload);
  EXPECT_EQ(*kc.get_or_compile(make_cache_key(other), make_manifest(other), b.fn()).cubin, b.payload);
  EXPECT_EQ(a.calls.load() + b.calls.load(), 2);
}

TEST_F(CacheTest, CorruptedPayloadByte) {
  expect_rebuilt(
      [](const fs::path& p) {
        std::vector<char> bytes = read_file(p);
        bytes[bytes.size() - 100] ^= 0x5a;
        write_file(p, bytes);
      },
      "payload checksum");
}

TEST_F(CacheTest, CorruptedManifestByte) {
  expect_rebuilt(
      [](const fs::path& p) {
        std::vector<char> bytes = read_file(p);
        bytes[45] ^= 0x01;
        write_file(p, bytes);
      },
      "header checksum");
}

TEST_F(CacheTest, TruncatedEntry) {
  expect_rebuilt([](const fs::path& p) { fs::resize_file(p, fs::file_size(p) / 2); }, "truncated");
}

TEST_F(CacheTest, TrailingBytes) {
  expect_rebuilt(
      [](const fs::path& p) {
        std::vector<char> bytes = read_file(p);
        bytes.push_back('!');
        write_file(p, bytes);
      },
      "trailing");
}

TEST_F(CacheTest, WrongManifest) {
  CacheKeyInputs other = inputs_;
  other.options.push_back("-DOTHER");
  // Same key, different manifest: what a key collision or a stale entry looks like.
  expect_rebuilt([](const fs::path&) {}, "manifest differs", make_manifest(other));
}

TEST_F(CacheTest, HeaderGarbage) {
  expect_rebuilt(
      [](const fs::path& p) {
        std::vector<char> bytes = read_file(p);
        const std::vector<char> garbage = make_payload(40, 99);
        std::copy(garbage.begin(), garbage.end(), bytes.begin());
        write_file(p, bytes);
      },
      "bad magic");
}

TEST_F(CacheTest, HeaderSizeFieldsGarbage) {
  expect_rebuilt(
      [](const fs::path& p) {
        std::vector<char> bytes = read_file(p);
        for (int i = 12; i < 24; ++i) bytes[i] = static_cast<char>(0xff);  // manifest and payload sizes
        write_file(p, bytes);
      },
      "corrupt header");
}

TEST_F(CacheTest, ZeroLengthFile) {
  expect_rebuilt([](const fs::path& p) { fs::resize_file(p, 0); }, "truncated: 0 bytes");
}

// ---------------------------------------------------------------------------
// Degraded directories

TEST_F(CacheTest, MissingDirectoryIsCreated) {
  const fs::path nested = dir_ / "a" / "b";
  ASSERT_FALSE(fs::exists(nested));
  ::testing::internal::CaptureStderr();
  KernelCache kc(DiskCache(nested, false));
  CountingCompile c{make_payload(256, 5)};
  kc.get_or_compile(key_, manifest_, c.fn());
  EXPECT_EQ(count_warnings(::testing::internal::GetCapturedStderr()), 0);
  EXPECT_TRUE(kc.disk().enabled());
  EXPECT_TRUE(fs::is_directory(nested));
  EXPECT_TRUE(fs::exists(kc.disk().entry_path(key_)));
}

TEST_F(CacheTest, DisabledOrEmptyDirIsMemoryOnlyWithoutWarning) {
  ::testing::internal::CaptureStderr();
  DiskCache disabled(dir_, true);
  DiskCache empty(fs::path{}, false);
  KernelCache kc(DiskCache(dir_, true));
  CountingCompile c{make_payload(256, 6)};
  EXPECT_EQ(kc.get_or_compile(key_, manifest_, c.fn()).source, CacheSource::compiled);
  EXPECT_EQ(kc.get_or_compile(key_, manifest_, c.fn()).source, CacheSource::memory);
  EXPECT_EQ(count_warnings(::testing::internal::GetCapturedStderr()), 0);
  EXPECT_FALSE(disabled.enabled());
  EXPECT_FALSE(empty.enabled());
  EXPECT_FALSE(fs::exists(dir_)) << "a disabled cache must not touch the disk";
}

// Memory-only with exactly one warning, correct results.
void expect_memory_only(const fs::path& dir) {
  ::testing::internal::CaptureStderr();
  KernelCache kc(DiskCache(dir, false));
  DiskCache again(dir, false);  // a second cache on the same directory does not warn again
  CountingCompile c{make_payload(512, 8)};
  CachedBinary a = kc.get_or_compile(make_cache_key(sample_inputs()), make_manifest(sample_inputs()), c.fn());
  CachedBinary b = kc.get_or_compile(make_cache_key(sample_inputs()), make_manifest(sample_inputs()), c.fn());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(kc.disk().enabled());
  EXPECT_FALSE(again.enabled());
  EXPECT_EQ(count_warnings(err), 1) << err;
  EXPECT_NE(err.find(dir.string()), std::string::npos) << "warning should name the directory: " << err;
  EXPECT_EQ(a.source, CacheSource::compiled);
  EXPECT_EQ(b.source, CacheSource::memory);
  EXPECT_EQ(*a.cubin, c.payload);
  EXPECT_EQ(*b.cubin, c.payload);
  EXPECT_EQ(c.calls.load(), 1);
}

// A directory this user cannot write (not root: root writes anyway) is still
// read: its entries serve, new kernels stay in memory, one warning says so.
TEST_F(CacheTest, ReadOnlyDirectory) {
  CountingCompile c{make_payload(512, 8)};
  {
    KernelCache writer(DiskCache(dir_, false));
    ASSERT_TRUE(writer.get_or_compile(key_, manifest_, c.fn()).on_disk);
  }
  ASSERT_EQ(::chmod(dir_.c_str(), 0555), 0);
  const fs::path probe = dir_ / "probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
    GTEST_SKIP() << "running as root: permissions are not enforced, so a 0555 directory is still writable "
                    "(ReadOnlyModeServesEntriesAndWritesNothing covers the read-only cache as root)";
  }
  ::testing::internal::CaptureStderr();
  KernelCache kc(DiskCache(dir_, false));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(kc.disk().enabled());
  EXPECT_FALSE(kc.disk().writable());
  EXPECT_EQ(count_warnings(err), 1) << err;
  EXPECT_NE(err.find("not writable"), std::string::npos) << err;
  const CachedBinary hit = kc.get_or_compile(key_, manifest_, c.fn());
  EXPECT_EQ(hit.source, CacheSource::disk);
  EXPECT_TRUE(hit.on_disk);
  EXPECT_EQ(c.calls.load(), 1);  // only the writer compiled
}

// The read-only mode (SGTOPK_CACHE_READ_ONLY, or a read-only mount): a
// shipped cache serves its kernels and is never written, even by root.
TEST_F(CacheTest, ReadOnlyModeServesEntriesAndWritesNothing) {
  CountingCompile c{make_payload(512, 8)};
  {
    KernelCache writer(DiskCache(dir_, false));
    ASSERT_TRUE(writer.get_or_compile(key_, manifest_, c.fn()).on_disk);
  }
  const auto before = files_under(dir_);
  ::testing::internal::CaptureStderr();
  KernelCache kc(DiskCache(dir_, false, /*read_only=*/true));
  ASSERT_TRUE(kc.disk().enabled());
  ASSERT_FALSE(kc.disk().writable());
  const CachedBinary hit = kc.get_or_compile(key_, manifest_, c.fn());
  EXPECT_EQ(hit.source, CacheSource::disk);
  EXPECT_TRUE(hit.on_disk);
  EXPECT_EQ(*hit.cubin, c.payload);
  EXPECT_EQ(c.calls.load(), 1);
  // A kernel the cache lacks is compiled and kept in memory only.
  CacheKeyInputs other = inputs_;
  other.source += "// another kernel\n";
  CountingCompile d{make_payload(256, 3)};
  const CachedBinary miss = kc.get_or_compile(make_cache_key(other), make_manifest(other), d.fn());
  EXPECT_EQ(miss.source, CacheSource::compiled);
  EXPECT_FALSE(miss.on_disk);
  const CachedBinary again = kc.get_or_compile(make_cache_key(other), make_manifest(other), d.fn());
  EXPECT_EQ(again.source, CacheSource::memory);
  EXPECT_FALSE(again.on_disk);
  // A bad entry is reported and left in place (the cache is not ours to edit).
  fs::create_directories(kc.disk().entry_path(make_cache_key(other)).parent_path());
  write_file(kc.disk().entry_path(make_cache_key(other)), {'b', 'a', 'd'});
  KernelCache fresh(DiskCache(dir_, false, true));
  EXPECT_EQ(fresh.get_or_compile(make_cache_key(other), make_manifest(other), d.fn()).source, CacheSource::compiled);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_warnings(err), 1) << err;  // the bad entry only: read-only was asked for
  EXPECT_NE(err.find("left in place"), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(kc.disk().entry_path(make_cache_key(other))));
  EXPECT_EQ(files_under(dir_).size(), before.size() + 1);  // only the entry this test planted
  EXPECT_EQ(kc.stats().store_failures, 0u);
}

// ------------------------------------------------------------------ trust ----
// The cache directory is code: what another user could have written is not
// run, and nothing on disk can hang, exhaust or redirect a load.

TEST_F(CacheTest, DirectoriesAreCreatedPrivate) {
  KernelCache kc(DiskCache(dir_ / "a" / "b", false));
  CountingCompile c{make_payload(128, 5)};
  ASSERT_TRUE(kc.get_or_compile(key_, manifest_, c.fn()).on_disk);
  for (const fs::path& d : {dir_, dir_ / "a", dir_ / "a" / "b", kc.disk().entry_path(key_).parent_path()}) {
    struct stat st {};
    ASSERT_EQ(::stat(d.c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << d;
  }
}

TEST_F(CacheTest, ADirectoryOthersCanWriteIsNotUsed) {
  ASSERT_TRUE(fs::create_directories(dir_));
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  ::testing::internal::CaptureStderr();
  KernelCache kc(DiskCache(dir_, false));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(kc.disk().enabled());
  EXPECT_EQ(count_warnings(err), 1) << err;
  EXPECT_NE(err.find("not trusted: it is writable by other users"), std::string::npos) << err;
}

TEST_F(CacheTest, ADirectoryOfAnotherUserIsNotUsed) {
  ASSERT_TRUE(fs::create_directories(dir_));
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give the directory to another user";
  ASSERT_EQ(::chown(dir_.c_str(), 4242, 4242), 0);
  ::testing::internal::CaptureStderr();
  KernelCache kc(DiskCache(dir_, false));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(kc.disk().enabled());
  EXPECT_NE(err.find("owned by uid 4242"), std::string::npos) << err;
}

TEST_F(CacheTest, UntrustedOrSpecialEntriesAreNotLoaded) {
  CountingCompile c{make_payload(256, 6)};
  {
    KernelCache writer(DiskCache(dir_, false));
    ASSERT_TRUE(writer.get_or_compile(key_, manifest_, c.fn()).on_disk);
  }
  const fs::path entry = DiskCache(dir_, false).entry_path(key_);
  const fs::path good = root_ / "good-entry";
  fs::copy_file(entry, good);
  const auto expect_recompiled = [&](const std::string& why) {
    ::testing::internal::CaptureStderr();
    KernelCache kc(DiskCache(dir_, false));
    const auto start = std::chrono::steady_clock::now();
    const CachedBinary r = kc.get_or_compile(key_, manifest_, c.fn());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.source, CacheSource::compiled) << why;
    EXPECT_LT(seconds, 5.0) << why << ": the load must not block";
    EXPECT_NE(err.find(why), std::string::npos) << err;
  };
  // Writable by others: not used (and replaced by a fresh entry).
  ASSERT_EQ(::chmod(entry.c_str(), 0666), 0);
  expect_recompiled("writable by other users");
  // A link: not followed.
  fs::remove(entry);
  fs::create_symlink(good, entry);
  expect_recompiled("symbolic link");
  // A FIFO: refused at once, never waited on.
  fs::remove(entry);
  ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0);
  expect_recompiled("not a regular file");
  // A huge (sparse) file: refused before any allocation.
  fs::remove(entry);
  {
    const int fd = ::open(entry.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t{1} << 40), 0);
    ::close(fd);
  }
  expect_recompiled("more than the");
}

TEST_F(CacheTest, OrphanedTemporariesAreSwept) {
  KernelCache kc(DiskCache(dir_, false));
  const fs::path fan_out = kc.disk().entry_path(key_).parent_path();
  ASSERT_TRUE(fs::create_directories(fan_out));
  const fs::path old_tmp = fan_out / (key_.hex() + ".sgtopkbin.tmp.1.2.dead");
  const fs::path new_tmp = fan_out / (key_.hex() + ".sgtopkbin.tmp.3.4.live");
  write_file(old_tmp, {'x'});
  write_file(new_tmp, {'y'});
  fs::last_write_time(old_tmp, fs::file_time_type::clock::now() - std::chrono::hours(1));
  CountingCompile c{make_payload(128, 7)};
  ASSERT_TRUE(kc.get_or_compile(key_, manifest_, c.fn()).on_disk);
  EXPECT_FALSE(fs::exists(old_tmp)) << "a store sweeps temporaries a killed process left";
  EXPECT_TRUE(fs::exists(new_tmp)) << "a recent one may belong to a store in progress";
}

TEST_F(CacheTest, UncreatableDirectory) {
  // A path below a regular file can never be created, even by root.
  const fs::path file = root_ / "plain_file";
  write_file(file, {'x'});
  expect_memory_only(file / "sub");
}

TEST_F(CacheTest, FailingStoreWarnsOnceAndKeepsWorking) {
  KernelCache kc(DiskCache(dir_, false));
  ASSERT_TRUE(kc.disk().enabled());
  // Block the fan-out subdirectory with a regular file: every write fails, even for root.
  write_file(kc.disk().entry_path(key_).parent_path(), {'x'});
  ::testing::internal::CaptureStderr();
  CountingCompile c{make_payload(512, 9)};
  CachedBinary a = kc.get_or_compile(key_, manifest_, c.fn());
  kc.disk().store(key_, manifest_, c.payload);  // a second failing write stays quiet
  CachedBinary b = kc.get_or_compile(key_, manifest_, c.fn());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_warnings(err), 1) << err;
  EXPECT_EQ(a.source, CacheSource::compiled);
  EXPECT_EQ(b.source, CacheSource::memory);
  EXPECT_EQ(*b.cubin, c.payload);
  // Every caller learns the kernel is not on disk, and the failure is counted.
  EXPECT_FALSE(a.on_disk);
  EXPECT_FALSE(b.on_disk);
  EXPECT_EQ(kc.stats().store_failures, 1u);
  for (const auto& f : files_under(dir_)) EXPECT_EQ(f.string().find(".tmp."), std::string::npos) << f;
}

// ---------------------------------------------------------------------------
// Concurrency

TEST_F(CacheTest, EightThreadsCompileOnce) {
  KernelCache kc(DiskCache(dir_, false));
  CountingCompile c{make_payload(4096, 10)};
  c.delay = std::chrono::milliseconds(50);
  constexpr int kThreads = 8;
  std::barrier start(kThreads);
  std::vector<CachedBinary> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      results[t] = kc.get_or_compile(key_, manifest_, c.fn());
    });
  for (auto& th : threads) th.join();

  EXPECT_EQ(c.calls.load(), 1);
  int compiled = 0;
  for (const auto& r : results) {
    ASSERT_NE(r.cubin, nullptr);
    EXPECT_EQ(r.cubin, results[0].cubin) << "all threads share one binary";
    compiled += r.source == CacheSource::compiled;
  }
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(*results[0].cubin, c.payload);
  const KernelCache::Stats s = kc.stats();
  EXPECT_EQ(s.compiled, 1u);
  EXPECT_EQ(s.memory_hits, static_cast<uint64_t>(kThreads - 1));
}

TEST_F(CacheTest, FourProcessRace) {
  ASSERT_TRUE(fs::create_directories(dir_));
  const std::vector<char> expected = make_payload(64 * 1024, 11);
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);

  constexpr int kChildren = 4;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      // Child: wait for the gate to open (EOF), then race. No gtest macros here.
      ::close(gate[1]);
      char byte;
      while (::read(gate[0], &byte, 1) > 0) {
      }
      int rc = 0;
      try {
        KernelCache kc(DiskCache(dir_, false));
        CachedBinary r = kc.get_or_compile(key_, manifest_, [&] {
          // Each compile leaves a mark: across processes the key compiles once.
          const fs::path mark = root_ / ("compiled." + std::to_string(::getpid()));
          if (FILE* f = std::fopen(mark.c_str(), "w")) std::fclose(f);
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          return expected;
        });
        if (!kc.disk().enabled()) rc = 2;
        if (*r.cubin != expected) rc = 3;
      } catch (...) {
        rc = 4;
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);  // opens the gate for every child at once

  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "child " << pid << " did not exit normally";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << pid << " failed";
  }

  // One process compiled; the others waited on the key's lock and read its entry.
  int compiles = 0;
  for (const auto& entry : fs::directory_iterator(root_))
    compiles += entry.path().filename().string().rfind("compiled.", 0) == 0 ? 1 : 0;
  EXPECT_EQ(compiles, 1) << "processes racing for one key should compile it once";

  std::vector<fs::path> files;
  for (const fs::path& f : files_under(dir_))
    if (f.extension() != ".lock") files.push_back(f);
  DiskCache disk(dir_, false);
  ASSERT_EQ(files.size(), 1u) << "expected exactly one entry and no temp files";
  EXPECT_EQ(files[0], disk.entry_path(key_));
  ::testing::internal::CaptureStderr();
  auto loaded = disk.load(key_, manifest_);
  EXPECT_EQ(count_warnings(::testing::internal::GetCapturedStderr()), 0);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, expected);
}

// ---------------------------------------------------------------------------
// Failures are not cached

TEST_F(CacheTest, ThrowingCompileIsNotCached) {
  KernelCache kc(DiskCache(dir_, false));
  int calls = 0;
  auto failing = [&]() -> std::vector<char> {
    ++calls;
    fail(SGTOPK_ERROR_COMPILE, "NVRTC failed: test");
  };
  EXPECT_THROW(kc.get_or_compile(key_, manifest_, failing), sgtopk::detail::Error);
  EXPECT_THROW(kc.get_or_compile(key_, manifest_, failing), sgtopk::detail::Error);
  EXPECT_EQ(calls, 2) << "a failure must not be remembered";
  EXPECT_FALSE(fs::exists(kc.disk().entry_path(key_)));
  EXPECT_EQ(kc.stats().failed, 2u);

  CountingCompile c{make_payload(128, 12)};
  CachedBinary r = kc.get_or_compile(key_, manifest_, c.fn());
  EXPECT_EQ(r.source, CacheSource::compiled);
  EXPECT_EQ(c.calls.load(), 1);
  EXPECT_EQ(*r.cubin, c.payload);
  EXPECT_TRUE(fs::exists(kc.disk().entry_path(key_)));
}

TEST_F(CacheTest, ThrowingCompileReachesEveryWaiter) {
  KernelCache kc(DiskCache(dir_, false));
  std::atomic<int> calls{0};
  auto failing = [&]() -> std::vector<char> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    throw std::runtime_error("compile exploded");
  };
  constexpr int kThreads = 4;
  std::barrier start(kThreads);
  std::atomic<int> caught{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      start.arrive_and_wait();
      try {
        kc.get_or_compile(key_, manifest_, failing);
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()) == "compile exploded") ++caught;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(caught.load(), kThreads);
  EXPECT_GE(calls.load(), 1);
  EXPECT_FALSE(fs::exists(kc.disk().entry_path(key_)));

  CountingCompile c{make_payload(128, 13)};
  EXPECT_EQ(kc.get_or_compile(key_, manifest_, c.fn()).source, CacheSource::compiled);
}

}  // namespace

// ------------------------------------------------------------ maintenance ----

namespace {

void set_mtime(const fs::path& p, time_t seconds) {
  const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << p;
}

}  // namespace

// `sgtopk cache` (cache/maintenance.h): the listing orders entries by last
// use, verify finds a damaged one, a load stamps its entry's last use, prune
// removes the least recently used first (and old temporaries), an entry
// whose lock a process holds is kept, and nothing that is not the cache's
// own is touched.
TEST_F(CacheTest, MaintenanceListsVerifiesPrunesAndClears) {
  DiskCache disk(dir_, false);
  std::vector<CacheKey> keys;
  std::vector<std::string> manifests;
  for (int i = 0; i < 3; ++i) {
    CacheKeyInputs in = inputs_;
    in.source += "// entry " + std::to_string(i);
    keys.push_back(make_cache_key(in));
    manifests.push_back(make_manifest(in));
    ASSERT_TRUE(disk.store(keys.back(), manifests.back(), make_payload(1000 + 100 * i, i)));
    set_mtime(disk.entry_path(keys.back()), 1000000 + 1000 * i);  // entry 0 used longest ago
  }
  { std::ofstream(dir_ / "notes.txt") << "not the cache's"; }
  const fs::path temporary = disk.entry_path(keys[2]).string() + ".tmp.1.2.3";
  { std::ofstream(temporary) << "left by a store that died"; }
  set_mtime(temporary, 1000000);
  { std::ofstream(disk.entry_path(keys[1]).string() + ".lock"); }

  CacheListing l = list_cache(dir_);
  ASSERT_TRUE(l.exists);
  ASSERT_EQ(l.entries.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.entries[static_cast<size_t>(i)].key_hex, keys[static_cast<size_t>(i)].hex());
  uint64_t bytes = 0;
  for (const auto& e : l.entries) bytes += fs::file_size(e.path);
  EXPECT_EQ(l.entry_bytes, bytes);
  EXPECT_EQ(l.locks, 1);
  EXPECT_EQ(l.temporaries, 1);
  EXPECT_TRUE(l.problems.empty());
  for (const auto& e : l.entries) EXPECT_EQ(verify_cache_entry(e.path), "") << e.path;

  // A damaged payload byte: verify names it; nothing is removed by verify.
  const fs::path damaged = disk.entry_path(keys[1]);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(damaged) - 1));
    f.put('\x5a');
  }
  EXPECT_EQ(verify_cache_entry(damaged), "payload checksum mismatch");
  EXPECT_TRUE(fs::exists(damaged));

  // Loading entry 0 makes it the most recently used.
  ASSERT_TRUE(disk.load(keys[0], manifests[0]).has_value());
  l = list_cache(dir_);
  ASSERT_EQ(l.entries.size(), 3u);
  EXPECT_EQ(l.entries.back().key_hex, keys[0].hex());

  // Prune to entry 0's size: entries 1 and 2 go (least recently used), so
  // does the old temporary; entry 0, the lock and the foreign file stay.
  const uint64_t keep = fs::file_size(disk.entry_path(keys[0]));
  const CacheRemoval pruned = prune_cache(dir_, keep);
  EXPECT_EQ(pruned.removed, 2);
  EXPECT_EQ(pruned.kept_bytes, keep);
  EXPECT_EQ(pruned.removed_other, 1);
  EXPECT_TRUE(pruned.errors.empty());
  EXPECT_TRUE(fs::exists(disk.entry_path(keys[0])));
  EXPECT_FALSE(fs::exists(disk.entry_path(keys[1])));
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_TRUE(fs::exists(dir_ / "notes.txt"));

  // An entry being compiled (its lock held) survives a clear; once released
  // it goes, with the locks and the emptied fan-out directories.
  {
    const DiskCache::EntryLock held = disk.lock_entry(keys[0], 1.0);
    ASSERT_TRUE(held.held());
    const CacheRemoval cleared = clear_cache(dir_);
    EXPECT_EQ(cleared.removed, 0);
    EXPECT_TRUE(fs::exists(disk.entry_path(keys[0])));
  }
  const CacheRemoval cleared = clear_cache(dir_);
  EXPECT_EQ(cleared.removed, 1);
  EXPECT_EQ(cleared.kept_bytes, 0u);
  l = list_cache(dir_);
  EXPECT_TRUE(l.entries.empty());
  EXPECT_EQ(l.locks, 0);
  EXPECT_TRUE(fs::exists(dir_ / "notes.txt"));
  EXPECT_FALSE(fs::exists(disk.entry_path(keys[0]).parent_path()));

  EXPECT_FALSE(list_cache(root_ / "missing").exists);
}
