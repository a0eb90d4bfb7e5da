#include "cache/files.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <system_error>

namespace sgtopk::detail {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

std::string untrusted_reason(const struct stat& st) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return "owned by uid " + std::to_string(st.st_uid) + ", neither this user (" + std::to_string(me) + ") nor root";
  const bool sticky_root_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && st.st_uid == 0;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_root_dir) return "writable by other users";
  return {};
}

std::string make_private_directories(const fs::path& path) {
  fs::path built;
  for (const fs::path& part : path) {
    built /= part;
    if (built.empty() || built == built.root_path()) continue;
    if (::mkdir(built.c_str(), 0700) == 0 || errno == EEXIST) continue;
    return "cannot create " + built.string() + ": " + errno_text(errno);
  }
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return path.string() + " is not a directory";
  return {};
}

FileBytes read_regular_file(const fs::path& path, uint64_t max_bytes, bool follow_links) {
  FileBytes out;
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow_links ? 0 : O_NOFOLLOW);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    out.missing = errno == ENOENT || errno == ENOTDIR;
    out.error = errno == ELOOP ? "it is a symbolic link" : errno_text(errno);
    return out;
  }
  struct stat& st = out.st;
  if (::fstat(fd, &st) != 0) {
    out.error = errno_text(errno);
  } else if (!S_ISREG(st.st_mode)) {
    out.error = S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    out.error = "it is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                " allowed";
  } else {
    out.bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < out.bytes.size()) {
      const ssize_t n = ::read(fd, out.bytes.data() + got, out.bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        out.error = errno_text(errno);
        break;
      }
      if (n == 0) break;  // shorter than fstat said: the caller's checks see it
      got += static_cast<size_t>(n);
    }
    out.bytes.resize(got);
  }
  ::close(fd);
  if (!out.error.empty()) out.bytes.clear();
  return out;
}

std::string write_new_file(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create " + path.string() + ": " + errno_text(errno);
  const char* data = text.data();
  size_t left = text.size();
  std::string error;
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot write " + path.string() + ": " + errno_text(errno);
      break;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && error.empty()) error = "cannot write " + path.string() + ": " + errno_text(errno);
  return error;
}

}  // namespace sgtopk::detail
