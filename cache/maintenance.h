// Maintenance of an on-disk kernel cache directory (`sgtopk cache`): list it,
// verify every entry, prune the least recently used entries to a size, clear
// it. Only files named as the cache names them are touched: entries
// (<2 hex>/<32 hex>.sgtopkbin), their lock files and the temporaries of
// stores; anything else in the directory is left alone and not counted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sgtopk::detail {

struct CacheEntryFile {
  std::filesystem::path path;
  std::string key_hex;     // the 32 hex digits of its name
  uint64_t bytes = 0;
  int64_t last_use_ns = 0;  // modification time: stored, or stamped by the last load
};

struct CacheListing {
  bool exists = false;                 // the directory exists
  std::vector<CacheEntryFile> entries;  // oldest last use first
  uint64_t entry_bytes = 0;
  int temporaries = 0;                 // leftovers of stores (<entry>.tmp.*)
  int locks = 0;                       // <entry>.lock
  std::vector<std::string> problems;   // what could not be read, each naming the path
};

// Lists `dir` (two levels, as the cache lays it out); never throws.
CacheListing list_cache(const std::filesystem::path& dir);

// Why the entry at `path` is not valid, or "" (cache/disk_cache.h
// entry_problem, the manifest checked for being sgtopk's; and the trust
// rules of cache/files.h).
std::string verify_cache_entry(const std::filesystem::path& path);

struct CacheRemoval {
  int removed = 0;             // entries
  uint64_t removed_bytes = 0;
  int removed_other = 0;       // temporaries and unheld locks
  uint64_t kept_bytes = 0;
  std::vector<std::string> errors;  // each naming the path
};

// Removes the least recently used entries until the entries left hold at
// most `max_bytes`, and the temporaries of stores that died; an entry a
// process is compiling (its lock held) is kept.
CacheRemoval prune_cache(const std::filesystem::path& dir, uint64_t max_bytes);

// Removes every entry, lock and temporary (prune to 0, locks included).
CacheRemoval clear_cache(const std::filesystem::path& dir);

}  // namespace sgtopk::detail
