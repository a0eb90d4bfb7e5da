#include "cache/disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>

#include "cache/files.h"
#include "runtime/log.h"

namespace sgtopk::detail {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'S', 'G', 'T', 'O', 'P', 'K', 'C', '\0'};
constexpr size_t kHeaderBytes = 40;
constexpr size_t kHeaderHashedBytes = 32;  // the header checksum covers the fields before it
// A manifest is a few hundred bytes; anything far larger is garbage, not a real entry.
constexpr uint32_t kMaxManifestBytes = 1u << 20;

void put_le(char* dst, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint64_t get_le(const char* src, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(src[i])) << (8 * i);
  return v;
}

uint64_t header_checksum(const char* header, const char* manifest, size_t manifest_bytes) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, header, kHeaderHashedBytes);
  XXH3_64bits_update(&state, manifest, manifest_bytes);
  return XXH3_64bits_digest(&state);
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// Writes all of `data`, retrying short writes and EINTR. Returns 0 or an errno.
int write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

// A name no other process, thread or host sharing the directory will pick.
std::string unique_suffix() {
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   (static_cast<uint64_t>(::getpid()) << 32) ^
                                   std::hash<std::thread::id>{}(std::this_thread::get_id())};
  static std::atomic<uint64_t> counter{0};
  std::ostringstream s;
  s << ::getpid() << '.' << std::hash<std::thread::id>{}(std::this_thread::get_id()) << '.' << std::hex << rng()
    << counter.fetch_add(1);
  return s.str();
}

// Can we create a file in `dir`? (access(W_OK) is not enough: it ignores
// read-only mounts on some systems and says yes to root.)
std::string probe_writable(const fs::path& dir) {
  const fs::path probe = dir / (".probe." + unique_suffix());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno_text(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return {};
}

// Removes this user's temporary entries in `dir` older than kOrphanAge: a
// store killed between open and rename leaves one behind.
void sweep_orphans(const fs::path& dir) {
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(std::string(kCacheEntryExtension) + ".tmp.") == std::string::npos) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    std::error_code time_ec;
    const auto written = fs::last_write_time(it->path(), time_ec);
    if (!time_ec && now - written > kOrphanAge) ::unlink(it->path().c_str());
  }
}

}  // namespace

std::string entry_problem(const std::vector<char>& bytes, const std::string* manifest, size_t* manifest_bytes_out) {
  std::string why;
  size_t manifest_bytes = 0;
  uint64_t payload_bytes = 0;
  if (bytes.size() < kHeaderBytes) {
    why = "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " + std::to_string(kHeaderBytes) +
          "-byte header";
  } else if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    why = "bad magic (not an sgtopk cache entry)";
  } else if (const uint64_t version = get_le(bytes.data() + 8, 4); version != static_cast<uint64_t>(kCacheFormatVersion)) {
    why = "format version " + std::to_string(version) + ", expected " + std::to_string(kCacheFormatVersion);
  } else {
    manifest_bytes = static_cast<size_t>(get_le(bytes.data() + 12, 4));
    payload_bytes = get_le(bytes.data() + 16, 8);
    const uint64_t available = bytes.size() - kHeaderBytes;
    const std::string_view stored(bytes.data() + kHeaderBytes, std::min<uint64_t>(manifest_bytes, available));
    if (manifest_bytes > kMaxManifestBytes || payload_bytes > available || manifest_bytes > available - payload_bytes) {
      why = "truncated or corrupt header: it declares " + std::to_string(manifest_bytes) + " manifest + " +
            std::to_string(payload_bytes) + " payload bytes but the file holds " + std::to_string(available);
    } else if (manifest_bytes + payload_bytes != available) {
      why = "size mismatch: " + std::to_string(available - manifest_bytes - payload_bytes) + " unexpected trailing bytes";
    } else if (header_checksum(bytes.data(), bytes.data() + kHeaderBytes, manifest_bytes) != get_le(bytes.data() + 32, 8)) {
      why = "header checksum mismatch";
    } else if (manifest != nullptr && stored != *manifest) {
      why = "manifest differs from the requested kernel's (stale entry or key collision)";
    } else if (manifest == nullptr && stored.substr(0, 22) != "sgtopk-cache-manifest\n") {
      why = "the manifest is not an sgtopk cache manifest";
    } else if (payload_bytes == 0) {
      why = "empty payload";
    } else if (XXH3_64bits(bytes.data() + kHeaderBytes + manifest_bytes, payload_bytes) != get_le(bytes.data() + 24, 8)) {
      why = "payload checksum mismatch";
    }
  }
  if (manifest_bytes_out != nullptr) *manifest_bytes_out = manifest_bytes;
  return why;
}

DiskCache::EntryLock& DiskCache::EntryLock::operator=(EntryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DiskCache::EntryLock::~EntryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

DiskCache::EntryLock DiskCache::lock_entry(const CacheKey& key, double timeout_s) const {
  if (!writable_) return EntryLock();
  const fs::path path = entry_path(key).string() + ".lock";
  if (!make_private_directories(path.parent_path()).empty()) return EntryLock();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return EntryLock();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return EntryLock(fd);
    if (errno != EWOULDBLOCK && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      log_warning("waited " + std::to_string(timeout_s) + " s for another process compiling '" + path.string() +
                  "'; compiling here too");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(fd);
  return EntryLock();
}

DiskCache::DiskCache(fs::path dir, bool disabled, bool read_only) : dir_(std::move(dir)) {
  if (disabled || dir_.empty()) return;
  std::string why;
  struct stat st {};
  if (!read_only) why = make_private_directories(dir_);
  if (!why.empty()) {
    why = "cannot create it: " + why;
  } else if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    why = read_only ? "it is not a directory (read-only use asked for)" : "it is not a directory";
  } else if (std::string untrusted = untrusted_reason(st); !untrusted.empty()) {
    why = "not trusted: it is " + untrusted + ", and its kernels would run in this process";
  } else if (::access(dir_.c_str(), R_OK | X_OK) != 0) {
    why = "it cannot be read: " + errno_text(errno);
  }
  if (!why.empty()) {
    log_warning_once("cache-dir:" + dir_.string(), "kernel cache directory '" + dir_.string() + "' unusable (" + why +
                                                       "); caching compiled kernels in memory only");
    return;
  }
  enabled_ = true;
  if (read_only) return;
  if (std::string err = probe_writable(dir_); !err.empty()) {
    log_warning_once("cache-dir:" + dir_.string(), "kernel cache directory '" + dir_.string() +
                                                       "' is not writable (" + err +
                                                       "): its kernels are used, new ones are kept in memory only");
    return;
  }
  writable_ = true;
}

fs::path DiskCache::entry_path(const CacheKey& key) const {
  const std::string hex = key.hex();
  return dir_ / hex.substr(0, 2) / (hex + kCacheEntryExtension);
}

std::optional<std::vector<char>> DiskCache::load(const CacheKey& key, const std::string& manifest) const {
  if (!enabled_) return std::nullopt;
  const fs::path path = entry_path(key);

  FileBytes file = read_regular_file(path, kMaxCacheEntryBytes, /*follow_links=*/false);
  if (file.missing) return std::nullopt;
  const struct stat st = file.st;
  std::string untrusted;
  if (file.error.empty()) untrusted = untrusted_reason(st);
  if (!file.error.empty() || !untrusted.empty()) {
    // Once per process and key: the kernel then lives in the memory cache.
    log_warning("kernel cache entry '" + path.string() + "' not used: " +
                (file.error.empty() ? "not trusted: it is " + untrusted : file.error) + " (will recompile)");
    return std::nullopt;
  }
  std::vector<char>& bytes = file.bytes;

  // Validate; any failure names its reason.
  size_t manifest_bytes = 0;
  const std::string why = entry_problem(bytes, &manifest, &manifest_bytes);
  if (why.empty()) {
    // The last-use stamp `sgtopk cache prune` orders entries by (best effort;
    // a read-only cache keeps its stamps).
    if (writable_) ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
    const auto begin = bytes.begin() + static_cast<std::ptrdiff_t>(kHeaderBytes + manifest_bytes);
    return std::vector<char>(begin, bytes.end());
  }

  // Remove the bad entry so it gets rebuilt, unless another process already
  // replaced it with a fresh one since we read it (different inode).
  struct stat now {};
  std::string removed = "removed";
  if (!writable_) {
    removed = "left in place: the cache is read-only";
  } else if (::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) removed = "could not remove it: " + errno_text(errno);
  } else {
    removed = "already replaced";
  }
  log_warning("invalid kernel cache entry '" + path.string() + "': " + why + " (" + removed + "; will recompile)");
  return std::nullopt;
}

bool DiskCache::store(const CacheKey& key, const std::string& manifest, const std::vector<char>& cubin) const {
  if (!writable_ || cubin.empty()) return false;  // an empty payload is never a loadable kernel
  const fs::path path = entry_path(key);
  const std::string topic = "cache-write:" + dir_.string();
  if (manifest.size() > kMaxManifestBytes) {
    log_warning_once(topic, "kernel cache manifest too large (" + std::to_string(manifest.size()) + " bytes); not stored");
    return false;
  }

  if (std::string err = make_private_directories(path.parent_path()); !err.empty()) {
    log_warning_once(topic, "cannot write kernel cache entry '" + path.string() + "': " + err +
                                "; caching in memory only");
    return false;
  }
  sweep_orphans(path.parent_path());

  char header[kHeaderBytes];
  std::memcpy(header, kMagic, sizeof kMagic);
  put_le(header + 8, static_cast<uint64_t>(kCacheFormatVersion), 4);
  put_le(header + 12, manifest.size(), 4);
  put_le(header + 16, cubin.size(), 8);
  put_le(header + 24, XXH3_64bits(cubin.data(), cubin.size()), 8);
  put_le(header + 32, header_checksum(header, manifest.data(), manifest.size()), 8);

  // Readers only ever see the final name, which appears complete via rename.
  const fs::path tmp = path.string() + ".tmp." + unique_suffix();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_warning_once(topic, "cannot write kernel cache entry '" + path.string() + "': " + errno_text(errno) +
                                "; caching in memory only");
    return false;
  }
  int err = write_all(fd, header, sizeof header);
  if (err == 0) err = write_all(fd, manifest.data(), manifest.size());
  if (err == 0) err = write_all(fd, cubin.data(), cubin.size());
  if (err == 0 && ::fsync(fd) != 0) err = errno;  // data on disk before the name points at it
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    log_warning_once(topic, "cannot write kernel cache entry '" + path.string() + "': " + errno_text(err) +
                                "; caching in memory only");
    return false;
  }
  // Make the rename itself durable; best effort.
  if (const int dfd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

}  // namespace sgtopk::detail
