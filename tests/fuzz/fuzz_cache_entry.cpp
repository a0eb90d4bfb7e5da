// Fuzz target: the disk cache's entry reader (DiskCache::load, cache/disk_cache.h).
//
// The input is written as the entry file of one fixed key in a private
// temporary cache directory, then loaded with one fixed manifest. Oracle: an
// independent check of the file format documented in cache/disk_cache.h. When
// the bytes are a valid entry for that manifest, load must return exactly its
// payload; otherwise it must return nullopt. It must never crash or throw.
//
// Input byte 0 is a mode: with its low bit set the two checksums of the rest
// (at offsets 24 and 32) are recomputed before the file is written, so the
// fuzzer also reaches the checks that come after them (sizes, manifest,
// empty payload); otherwise the rest is written as is.
#include <unistd.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_key.h"
#include "cache/disk_cache.h"
#include "fuzz_common.h"
#include "runtime/knobs.h"

namespace detail = sgtopk::detail;
namespace fs = std::filesystem;

namespace {

[[noreturn]] void finding(const std::string& what) { sgtopk_fuzz::finding("cache_entry", what); }

// The inputs of the fixed key and manifest (also those of the corpus's valid
// entries: SGTOPK_FUZZ_WRITE_SEEDS below).
const detail::CacheKeyInputs& inputs() {
  static const detail::CacheKeyInputs in{
      "extern \"C\" __global__ void k() {}\n", {{"sgtopk/abi.h", "// abi\n"}}, {"--std=c++17", "-arch=sm_90"},
      "sm_90", "13.0", "0.1.0"};
  return in;
}

constexpr size_t kHeader = 40;

uint64_t le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Rewrites the payload and header checksums as far as the bytes allow.
void fix_checksums(std::vector<uint8_t>& b) {
  if (b.size() < kHeader) return;
  const uint64_t m = le(b.data() + 12, 4), p = le(b.data() + 16, 8);
  const uint64_t avail = b.size() - kHeader;
  if (m <= avail && p <= avail - m) put_le(b.data() + 24, XXH3_64bits(b.data() + kHeader + m, p), 8);
  const uint64_t hm = m <= avail ? m : avail;
  XXH3_state_t s;
  XXH3_64bits_reset(&s);
  XXH3_64bits_update(&s, b.data(), 32);
  XXH3_64bits_update(&s, b.data() + kHeader, hm);
  put_le(b.data() + 32, XXH3_64bits_digest(&s), 8);
}

// The format of cache/disk_cache.h, checked independently of the reader.
std::optional<std::vector<char>> expected_payload(const std::vector<uint8_t>& b, const std::string& manifest) {
  if (b.size() < kHeader) return std::nullopt;
  if (std::memcmp(b.data(), "SGTOPKC\0", 8) != 0) return std::nullopt;
  if (le(b.data() + 8, 4) != static_cast<uint64_t>(detail::kCacheFormatVersion)) return std::nullopt;
  const uint64_t m = le(b.data() + 12, 4), p = le(b.data() + 16, 8);
  const uint64_t avail = b.size() - kHeader;
  if (m > avail || p != avail - m) return std::nullopt;  // the size must be exactly 40 + M + P
  if (p == 0) return std::nullopt;
  XXH3_state_t s;
  XXH3_64bits_reset(&s);
  XXH3_64bits_update(&s, b.data(), 32);
  XXH3_64bits_update(&s, b.data() + kHeader, m);
  if (XXH3_64bits_digest(&s) != le(b.data() + 32, 8)) return std::nullopt;
  if (std::string_view(reinterpret_cast<const char*>(b.data()) + kHeader, m) != manifest) return std::nullopt;
  if (XXH3_64bits(b.data() + kHeader + m, p) != le(b.data() + 24, 8)) return std::nullopt;
  return std::vector<char>(b.begin() + static_cast<std::ptrdiff_t>(kHeader + m), b.end());
}

struct Fixture {
  fs::path dir;
  detail::CacheKey key;
  std::string manifest;
  std::optional<detail::DiskCache> cache;
  fs::path entry;
};

Fixture& fixture() {
  static Fixture* f = [] {
    auto* x = new Fixture;
    std::string tmpl = (fs::temp_directory_path() / "sgtopk-fuzz-cache.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) finding("mkdtemp failed");
    x->dir = tmpl;
    x->key = detail::make_cache_key(inputs());
    x->manifest = detail::make_manifest(inputs());
    x->cache.emplace(x->dir, false);
    if (!x->cache->enabled()) finding("the temporary cache directory is not usable");
    x->entry = x->cache->entry_path(x->key);
    fs::create_directories(x->entry.parent_path());
    // Leave no directory behind; the entry itself is rewritten per input.
    std::atexit([] { std::error_code ec; fs::remove_all(fixture().dir, ec); });
    return x;
  }();
  return *f;
}

void write_file(const fs::path& path, uint8_t mode, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.put(static_cast<char>(mode));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) finding("cannot write " + path.string());
}

// The seed corpus: one valid entry published by DiskCache::store, and
// mutations of it that each stop at a different check of the reader.
void write_seeds(const fs::path& out_dir) {
  Fixture& f = fixture();
  std::vector<char> payload(300);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7 + 1);
  f.cache->store(f.key, f.manifest, payload);
  std::ifstream in(f.entry, std::ios::binary);
  const std::vector<uint8_t> valid((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!expected_payload(valid, f.manifest)) finding("DiskCache::store wrote an entry the oracle rejects");
  fs::create_directories(out_dir);
  const auto mutated = [&](const char* name, uint8_t mode, auto&& change) {
    std::vector<uint8_t> b = valid;
    change(b);
    write_file(out_dir / name, mode, b);
  };
  const uint64_t m = f.manifest.size();
  mutated("valid", 0, [](auto&) {});
  mutated("valid-fix", 1, [](auto&) {});
  mutated("empty", 0, [](auto& b) { b.clear(); });
  mutated("short-header", 0, [](auto& b) { b.resize(30); });
  mutated("header-only", 1, [](auto& b) { b.resize(kHeader); });
  mutated("truncated-payload", 0, [](auto& b) { b.resize(b.size() - 10); });
  mutated("trailing-bytes", 1, [](auto& b) { b.insert(b.end(), 5, 0xAB); });
  mutated("bad-magic", 0, [](auto& b) { b[3] = 'X'; });
  mutated("version-2", 1, [](auto& b) { put_le(b.data() + 8, 2, 4); });
  mutated("manifest-size-huge", 1, [](auto& b) { put_le(b.data() + 12, 0xFFFFFFFF, 4); });
  mutated("payload-size-huge", 1, [](auto& b) { put_le(b.data() + 16, ~uint64_t{0}, 8); });
  mutated("sizes-wrap", 1, [&](auto& b) { put_le(b.data() + 16, uint64_t{0} - m, 8); });
  mutated("empty-payload", 1, [&](auto& b) { b.resize(kHeader + m); put_le(b.data() + 16, 0, 8); });
  mutated("header-checksum", 0, [](auto& b) { b[33] ^= 1; });
  mutated("payload-checksum", 0, [](auto& b) { b.back() ^= 1; });
  mutated("other-manifest", 1, [](auto& b) { b[kHeader + 2] ^= 0x20; });
  mutated("manifest-longer", 1, [&](auto& b) { put_le(b.data() + 12, m + 1, 4); put_le(b.data() + 16, b.size() - kHeader - m - 1, 8); });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Invalid entries are the common case here; their warnings would flood stderr.
  ::setenv("SGTOPK_VERBOSE", "0", 0);
  detail::reload_knobs();  // they were read at static initialization
  (void)fixture();
  // SGTOPK_FUZZ_WRITE_SEEDS=DIR: write the seed corpus to DIR and exit.
  if (const char* dir = std::getenv("SGTOPK_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Fixture& f = fixture();
  std::vector<uint8_t> bytes(data + 1, data + size);
  if (data[0] & 1) fix_checksums(bytes);
  {
    std::ofstream out(f.entry, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) finding("cannot write the entry file " + f.entry.string());
  }
  const std::optional<std::vector<char>> want = expected_payload(bytes, f.manifest);
  std::optional<std::vector<char>> got;
  try {
    got = f.cache->load(f.key, f.manifest);
  } catch (const std::exception& e) {
    finding(std::string("DiskCache::load threw: ") + e.what());
  } catch (...) {
    finding("DiskCache::load threw a non-std exception");
  }
  if (want && !got) finding("a valid entry was rejected (" + std::to_string(bytes.size()) + " bytes)");
  if (!want && got) finding("an invalid entry was accepted (" + std::to_string(bytes.size()) + " bytes)");
  if (want && *got != *want) finding("load returned a payload other than the entry's");
  return 0;
}
