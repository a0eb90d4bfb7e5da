#include "cache/maintenance.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <system_error>

#include "cache/disk_cache.h"
#include "cache/files.h"

namespace sgtopk::detail {

namespace fs = std::filesystem;

namespace {

bool is_hex(const std::string& s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// What a file name in fan-out directory `fan` is: an entry (key in `key`), a
// lock, a temporary, or none of the cache's.
enum class Kind { entry, lock, temporary, other };
Kind kind_of(const std::string& fan, const std::string& name, std::string* key) {
  const std::string ext = kCacheEntryExtension;
  if (name.size() < 32 + ext.size() || !is_hex(name.substr(0, 32), 32) || name.compare(0, 2, fan) != 0 ||
      name.compare(32, ext.size(), ext) != 0)
    return Kind::other;
  *key = name.substr(0, 32);
  const std::string rest = name.substr(32 + ext.size());
  if (rest.empty()) return Kind::entry;
  if (rest == ".lock") return Kind::lock;
  if (rest.rfind(".tmp.", 0) == 0) return Kind::temporary;
  return Kind::other;
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

template <typename Visit>
void for_each_cache_file(const fs::path& dir, std::vector<std::string>& problems, Visit&& visit) {
  std::error_code ec;
  for (auto fan = fs::directory_iterator(dir, ec); !ec && fan != fs::directory_iterator(); fan.increment(ec)) {
    const std::string fan_name = fan->path().filename().string();
    if (!is_hex(fan_name, 2)) continue;
    struct stat st {};
    if (::lstat(fan->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;  // never through a link
    std::error_code inner;
    for (auto it = fs::directory_iterator(fan->path(), inner); !inner && it != fs::directory_iterator();
         it.increment(inner)) {
      std::string key;
      const Kind kind = kind_of(fan_name, it->path().filename().string(), &key);
      if (kind == Kind::other) continue;
      struct stat fst {};
      if (::lstat(it->path().c_str(), &fst) != 0 || !S_ISREG(fst.st_mode)) continue;
      visit(kind, it->path(), key, fst);
    }
    if (inner) problems.push_back(fan->path().string() + ": cannot list: " + inner.message());
  }
  if (ec && ec != std::errc::no_such_file_or_directory) problems.push_back(dir.string() + ": cannot list: " + ec.message());
}

int64_t mtime_ns(const struct stat& st) { return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec; }

// Removes a lock file nobody holds (a held one belongs to a process compiling).
bool remove_unheld_lock(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  bool removed = false;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) removed = ::unlink(path.c_str()) == 0;
  ::close(fd);
  return removed;
}

bool lock_held(const fs::path& entry) {
  const fs::path lock = entry.string() + ".lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);  // releases ours, if we took it
  return held;
}

CacheRemoval remove_entries(const fs::path& dir, uint64_t max_bytes, bool locks_too) {
  CacheRemoval r;
  CacheListing listing = list_cache(dir);
  r.errors = listing.problems;
  uint64_t total = listing.entry_bytes;
  for (const CacheEntryFile& e : listing.entries) {  // oldest last use first
    if (total <= max_bytes) break;
    if (lock_held(e.path)) continue;
    if (::unlink(e.path.c_str()) != 0) {
      if (errno != ENOENT) r.errors.push_back(e.path.string() + ": cannot remove: " + errno_text(errno));
      continue;
    }
    ++r.removed;
    r.removed_bytes += e.bytes;
    total -= e.bytes;
  }
  r.kept_bytes = total;
  std::vector<std::string> ignored;
  for_each_cache_file(dir, ignored, [&](Kind kind, const fs::path& path, const std::string&, const struct stat& st) {
    const auto age = std::chrono::seconds(::time(nullptr) - st.st_mtim.tv_sec);
    if (kind == Kind::temporary && (locks_too || age > kOrphanAge)) {
      if (::unlink(path.c_str()) == 0) ++r.removed_other;
    } else if (kind == Kind::lock && locks_too) {
      if (remove_unheld_lock(path)) ++r.removed_other;
    }
  });
  if (locks_too) {  // the emptied fan-out directories (rmdir leaves any that still hold something)
    std::error_code ec;
    for (auto fan = fs::directory_iterator(dir, ec); !ec && fan != fs::directory_iterator(); fan.increment(ec)) {
      struct stat st {};
      if (is_hex(fan->path().filename().string(), 2) && ::lstat(fan->path().c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        ::rmdir(fan->path().c_str());
    }
  }
  return r;
}

}  // namespace

CacheListing list_cache(const fs::path& dir) {
  CacheListing l;
  struct stat st {};
  l.exists = ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (!l.exists) return l;
  for_each_cache_file(dir, l.problems, [&](Kind kind, const fs::path& path, const std::string& key, const struct stat& fst) {
    if (kind == Kind::entry) {
      l.entries.push_back(CacheEntryFile{path, key, static_cast<uint64_t>(fst.st_size), mtime_ns(fst)});
      l.entry_bytes += static_cast<uint64_t>(fst.st_size);
    } else if (kind == Kind::lock) {
      ++l.locks;
    } else {
      ++l.temporaries;
    }
  });
  std::sort(l.entries.begin(), l.entries.end(), [](const CacheEntryFile& a, const CacheEntryFile& b) {
    return a.last_use_ns != b.last_use_ns ? a.last_use_ns < b.last_use_ns : a.key_hex < b.key_hex;
  });
  return l;
}

std::string verify_cache_entry(const fs::path& path) {
  const FileBytes file = read_regular_file(path, kMaxCacheEntryBytes, /*follow_links=*/false);
  if (!file.error.empty()) return file.error;
  if (std::string untrusted = untrusted_reason(file.st); !untrusted.empty()) return "not trusted: it is " + untrusted;
  return entry_problem(file.bytes, nullptr);
}

CacheRemoval prune_cache(const fs::path& dir, uint64_t max_bytes) { return remove_entries(dir, max_bytes, false); }

CacheRemoval clear_cache(const fs::path& dir) { return remove_entries(dir, 0, true); }

}  // namespace sgtopk::detail
