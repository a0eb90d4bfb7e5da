// The on-disk cubin cache: one file per key, published atomically, verified on
// every load; a load stamps the entry's modification time (its last use, by
// which `sgtopk cache prune` orders entries).
//
// Layout: <dir>/<first 2 hex digits of the key>/<32 hex digits>.sgtopkbin
// (the two-digit fan-out keeps directories small for large caches). Temporary
// files live next to their final name as
// <32 hex>.sgtopkbin.tmp.<pid>.<thread>.<random> and are renamed over it;
// <32 hex>.sgtopkbin.lock serializes the processes compiling that key.
//
// Trust (cache/files.h): the directory and each entry must belong to this
// user or root and be writable by no one else, or they are not used (one
// warning); directories are created 0700; entries are read without
// following links, as regular files of bounded size.
//
// Entry file format (all integers little-endian):
//   offset  size  field
//        0     8  magic "SGTOPKC\0"
//        8     4  uint32 format version (kCacheFormatVersion)
//       12     4  uint32 manifest bytes (M)
//       16     8  uint64 payload bytes (P, > 0)
//       24     8  uint64 xxh3-64 of the payload
//       32     8  uint64 xxh3-64 of bytes [0, 32) followed by the manifest
//       40     M  manifest text (make_manifest of the key's inputs)
//     40+M     P  payload (the cubin)
// The file size must be exactly 40 + M + P.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_key.h"

namespace sgtopk::detail {

inline constexpr char kCacheEntryExtension[] = ".sgtopkbin";

// Why an entry file's bytes are not a valid entry, or "" when they are: the
// magic, the format version, the sizes, the header and payload checksums,
// and the manifest: equal to `*manifest` when given, else an sgtopk manifest.
// `manifest_bytes` (optional) receives the stored manifest's size.
std::string entry_problem(const std::vector<char>& bytes, const std::string* manifest, size_t* manifest_bytes = nullptr);

// Temporary files older than this in an entry's directory were left by a
// process that died mid-store (a store takes milliseconds).
inline constexpr std::chrono::minutes kOrphanAge{10};

// Entries hold at most this many bytes (cubins are a few hundred KB); a larger
// file is not read, nor allocated for.
inline constexpr uint64_t kMaxCacheEntryBytes = uint64_t{64} << 20;

class DiskCache {
 public:
  // dir empty or disabled=true -> memory-only, silently. If the directory
  // cannot be created or is not a directory -> memory-only with one warning
  // naming the directory and the reason. A directory that can be read but
  // not written (a read-only mount, another user's, or read_only=true) is
  // read: its valid entries are used, and new kernels stay in memory (one
  // warning, unless read_only was asked for).
  DiskCache(std::filesystem::path dir, bool disabled, bool read_only = false);

  bool enabled() const { return enabled_; }    // entries are read
  bool writable() const { return writable_; }  // new entries are stored
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path entry_path(const CacheKey& key) const;

  // The cubin when a valid entry exists. An invalid entry (truncated,
  // corrupted, other manifest) is reported with one warning naming the file
  // and the reason, removed, and nullopt is returned. Never throws.
  std::optional<std::vector<char>> load(const CacheKey& key, const std::string& manifest) const;

  // Atomic publish (temp file, fsync, rename). Never publishes an empty
  // payload. Returns whether the entry is now on disk; a failing write warns
  // once per directory and never throws. Temporary files other processes
  // left in the entry's directory (killed mid-store) are swept.
  bool store(const CacheKey& key, const std::string& manifest, const std::vector<char>& cubin) const;

  // Cross-process single flight: an exclusive lock on the key's lock file
  // (<entry>.lock, flock), so that processes missing the same entry compile
  // it once; the others wait, then find it on disk. Gives up after `timeout`
  // (the caller then compiles anyway); none on a cache that is not writable.
  class EntryLock {
   public:
    EntryLock() = default;
    explicit EntryLock(int fd) : fd_(fd) {}
    EntryLock(EntryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    EntryLock& operator=(EntryLock&& other) noexcept;
    EntryLock(const EntryLock&) = delete;
    EntryLock& operator=(const EntryLock&) = delete;
    ~EntryLock();
    bool held() const { return fd_ >= 0; }

   private:
    int fd_ = -1;
  };
  EntryLock lock_entry(const CacheKey& key, double timeout_s) const;

 private:
  std::filesystem::path dir_;
  bool enabled_ = false;
  bool writable_ = false;
};

}  // namespace sgtopk::detail
