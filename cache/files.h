// File operations for what sgtopk reads and writes on disk (cache entries,
// failure dumps, policy files), under one trust model: the cache directory is
// code (its cubins run in the caller's process), so only the user's own or
// root's files are read, nothing is written through a link, only regular
// files are read, and sizes are checked before anything is allocated.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sgtopk::detail {

// Why a file or directory cannot be trusted, or "" when it can: it must be
// owned by this user or by root and writable by no one else (no group or
// other write bit, unless a directory is sticky and root's, like /tmp).
std::string untrusted_reason(const struct stat& st);

// Creates the missing directories of `path` with mode 0700 (the existing ones
// are left as they are). Returns "" or the reason it failed.
std::string make_private_directories(const std::filesystem::path& path);

struct FileBytes {
  std::vector<char> bytes;
  std::string error;       // "" on success
  bool missing = false;    // the path does not exist (error names that too)
  struct stat st {};       // the file's, once opened
};

// Reads a regular file of at most `max_bytes`: opened without blocking (a
// FIFO or a device is refused, not waited on), without following a final
// link when `follow_links` is false, its type and size checked before any
// allocation.
FileBytes read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, bool follow_links);

// Creates a new file (never through a link, never over an existing one)
// holding `text`, mode 0600. Returns "" or the reason it failed.
std::string write_new_file(const std::filesystem::path& path, const std::string& text);

}  // namespace sgtopk::detail
