#include "cache/kernel_cache.h"

#include <chrono>
#include <exception>
#include <optional>

#include "runtime/error.h"
#include "runtime/log.h"

namespace sgtopk::detail {

namespace {
// How long a process waits for another compiling the same kernel before it
// compiles too (a compile takes seconds; a holder that dies releases at once).
constexpr double kLockTimeoutSeconds = 300.0;
}  // namespace

KernelCache::KernelCache(DiskCache disk) : disk_(std::move(disk)) {}

CachedBinary KernelCache::get_or_compile(const CacheKey& key, const std::string& manifest,
                                         const std::function<std::vector<char>()>& compile) {
  std::promise<Entry> promise;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      std::shared_future<Entry> pending = it->second;
      lock.unlock();
      Entry entry = pending.get();  // waits for the thread in flight; rethrows its failure
      std::lock_guard<std::mutex> relock(mutex_);
      ++stats_.memory_hits;
      return {std::move(entry.cubin), CacheSource::memory, 0.0, entry.on_disk};
    }
    // We lead this key: publish a pending entry so others wait on us.
    entries_.emplace(key, promise.get_future().share());
  }

  // Disk and compile run without the lock, so other keys proceed in parallel.
  Binary cubin;
  CacheSource source = CacheSource::disk;
  double ms = 0.0;
  DiskCache::EntryLock entry_lock;  // held across compile and store, released on return
  try {
    std::optional<std::vector<char>> bytes = disk_.load(key, manifest);
    // Another process may be compiling this key: wait for it, then look again.
    if (!bytes && disk_.writable()) {
      entry_lock = disk_.lock_entry(key, kLockTimeoutSeconds);
      if (entry_lock.held()) bytes = disk_.load(key, manifest);
    }
    if (bytes) {
      cubin = std::make_shared<const std::vector<char>>(std::move(*bytes));
    } else {
      const auto start = std::chrono::steady_clock::now();
      std::vector<char> compiled = compile();
      ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      // An empty binary can never be loaded; treat it as a failed compile rather than cache it.
      if (compiled.empty()) fail(SGTOPK_ERROR_INTERNAL, "kernel compile produced an empty binary (key " + key.hex() + ")");
      cubin = std::make_shared<const std::vector<char>>(std::move(compiled));
      source = CacheSource::compiled;
    }
  } catch (...) {
    // Forget the key before waking the waiters, so a later call compiles again.
    {
      std::lock_guard<std::mutex> lock(mutex_);
      entries_.erase(key);
      ++stats_.failed;
    }
    promise.set_exception(std::current_exception());
    throw;
  }

  const bool on_disk = source == CacheSource::disk || disk_.store(key, manifest, *cubin);
  promise.set_value(Entry{cubin, on_disk});
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(source == CacheSource::compiled ? stats_.compiled : stats_.disk_hits);
    if (source == CacheSource::compiled && !on_disk && disk_.writable()) ++stats_.store_failures;
  }
  if (source == CacheSource::compiled) {
    log_info("kernel cache: compiled " + key.hex() + " in " + std::to_string(ms) + " ms");
  } else {
    log_info("kernel cache: disk hit " + key.hex());
  }
  return {std::move(cubin), source, ms, on_disk};
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace sgtopk::detail
