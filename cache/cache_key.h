// The cache key: a 128-bit xxh3 hash of everything that can change a compiled
// cubin, and a readable manifest of the same inputs stored next to the cubin so
// a load can verify it got what it asked for (a hash collision or a stale entry
// is caught, not launched).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sgtopk::detail {

// Bump when the key serialization, the manifest text or the entry file format
// changes: old entries then simply stop matching.
inline constexpr int kCacheFormatVersion = 1;

struct CacheKeyInputs {
  std::string source;                                        // generated CUDA source
  std::vector<std::pair<std::string, std::string>> headers;  // (name, exact text) of every header handed to NVRTC
  std::vector<std::string> options;                          // NVRTC options
  std::string target;                                        // exact target, e.g. "sm_90"
  std::string nvrtc_version;                                 // e.g. "13.0"
  std::string library_version;                               // e.g. "0.1.0"
};

struct CacheKey {
  uint64_t high = 0, low = 0;
  std::string hex() const;  // 32 lowercase hex digits, high word first
  bool operator==(const CacheKey&) const = default;
};

struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const noexcept { return static_cast<size_t>(k.low ^ (k.high * 0x9E3779B97F4A7C15ull)); }
};

// xxh3-128 over a length-prefixed serialization of all inputs plus
// kCacheFormatVersion. Headers and options are hashed in the order given
// (order is part of what NVRTC sees).
CacheKey make_cache_key(const CacheKeyInputs& inputs);

// Deterministic text, one "name=value" per line: format version, target, NVRTC
// and library versions, each option, xxh3-64 of the source and of each header.
std::string make_manifest(const CacheKeyInputs& inputs);

}  // namespace sgtopk::detail
