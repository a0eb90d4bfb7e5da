// The process-wide kernel cache: memory in front of the disk cache, with one
// compile per key in flight at a time (other threads asking for the same key
// wait for it instead of running NVRTC again).
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/cache_key.h"
#include "cache/disk_cache.h"

namespace sgtopk::detail {

enum class CacheSource { compiled = 0, memory = 1, disk = 2 };

struct CachedBinary {
  std::shared_ptr<const std::vector<char>> cubin;
  CacheSource source;
  double compile_ms = 0;
  bool on_disk = false;  // the key's entry is in the disk cache (read from it, or stored)
};

class KernelCache {
 public:
  explicit KernelCache(DiskCache disk);

  // Memory hit -> memory; else disk hit -> disk (and kept in memory); else runs
  // `compile` once per key in this process (concurrent callers wait and get
  // source=memory), stores the result to disk and returns source=compiled.
  // Waiters wake once the store is done, so every caller's on_disk is final.
  // If `compile` throws (or returns an empty binary), nothing is cached, the
  // exception reaches every waiter, and a later call compiles again.
  CachedBinary get_or_compile(const CacheKey& key, const std::string& manifest,
                              const std::function<std::vector<char>()>& compile);

  const DiskCache& disk() const { return disk_; }

  // memory_hits counts callers served from memory, including those that waited
  // for another thread's load or compile; failed counts compiles that threw;
  // store_failures compiled kernels a writable disk cache failed to keep.
  struct Stats {
    uint64_t memory_hits = 0, disk_hits = 0, compiled = 0, failed = 0, store_failures = 0;
  };
  Stats stats() const;

 private:
  using Binary = std::shared_ptr<const std::vector<char>>;
  struct Entry {
    Binary cubin;
    bool on_disk = false;
  };

  DiskCache disk_;
  mutable std::mutex mutex_;
  // A ready future is a memory hit; a pending one is a load/compile in flight.
  std::unordered_map<CacheKey, std::shared_future<Entry>, CacheKeyHash> entries_;
  Stats stats_;
};

}  // namespace sgtopk::detail
