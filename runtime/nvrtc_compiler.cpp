#include "runtime/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <cstring>
#include <sys/stat.h>
#include <filesystem>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>

#include "cache/files.h"
#include "runtime/error.h"
#include "runtime/knobs.h"
#include "runtime/log.h"

namespace sgtopk::detail {

namespace {

std::string nvrtc_error(nvrtcResult r) { return nvrtcGetErrorString(r); }

// RAII over an nvrtcProgram.
struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  // The size counts the terminating NUL, and some NVRTC versions end the text
  // with more of them: keep the text only.
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// Writes a new file (never through a link or over an existing file),
// throwing (naming the file) when it cannot be written.
void write_text(const std::filesystem::path& path, const std::string& text) {
  if (std::string err = write_new_file(path, text); !err.empty()) throw std::runtime_error(err);
}

// Dumps are for a person to read: at most this many kept (the oldest go
// first), each NVRTC log cut to this size.
constexpr size_t kMaxDumps = 32;
constexpr size_t kMaxLogBytes = size_t{1} << 20;

// Removes the oldest "<prefix>*" folders under `root` beyond kMaxDumps - 1,
// so that the dump about to be written keeps the count at kMaxDumps.
void prune_dumps(const std::filesystem::path& root, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> dumps;
  for (auto it = fs::directory_iterator(root, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) != 0 || it->is_symlink() || !it->is_directory()) continue;
    std::error_code time_ec;
    dumps.emplace_back(fs::last_write_time(it->path(), time_ec), it->path());
  }
  if (dumps.size() < kMaxDumps) return;
  std::sort(dumps.begin(), dumps.end());
  for (size_t i = 0; i + kMaxDumps - 1 < dumps.size(); ++i) fs::remove_all(dumps[i].second, ec);
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

void write_source_folder(const std::string& dir, const GeneratedSource& source, const std::vector<std::string>& options,
                         const std::string& log) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(dir).parent_path();
  if (std::string err = make_private_directories(root); !err.empty()) throw std::runtime_error(err);
  prune_dumps(root, fs::path(dir).filename().string().substr(0, fs::path(dir).filename().string().find('-') + 1));
  // A fresh folder of ours: an existing one (a link planted there, or an
  // earlier dump of this key) is replaced, never written through.
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (::mkdir(dir.c_str(), 0700) != 0) throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
  write_text(fs::path(dir) / source.name, source.text);
  for (const auto& [name, text] : source.headers) {
    const fs::path path = fs::path(dir) / "include" / name;
    if (std::string err = make_private_directories(path.parent_path()); !err.empty()) throw std::runtime_error(err);
    write_text(path, text);
  }
  std::string opts;
  for (const auto& o : options) opts += o + "\n";
  opts += "-Iinclude\n";
  write_text(fs::path(dir) / "options.txt", opts);
  if (!log.empty())
    write_text(fs::path(dir) / "nvrtc.log",
               log.size() <= kMaxLogBytes ? log : log.substr(0, kMaxLogBytes) + "\n[log cut at 1 MB]\n");
  write_text(fs::path(dir) / "README.txt",
             "Reproduce with nvcc: nvcc -cubin -arch=<see options.txt> -Iinclude " + source.name + "\n");
}

std::vector<char> compile_cubin(const GeneratedSource& source, const std::vector<std::string>& options,
                                const std::string& arch, const std::string& tag, std::string* log_out) {
  Program program;
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : source.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  nvrtcResult r = nvrtcCreateProgram(&program.handle, source.text.c_str(), source.name.c_str(),
                                     static_cast<int>(header_texts.size()), header_texts.data(), header_names.data());
  if (r != NVRTC_SUCCESS) fail(SGTOPK_ERROR_COMPILE, "NVRTC failed to create the program: " + nvrtc_error(r));

  std::vector<const char*> option_ptrs;
  for (const auto& o : options) option_ptrs.push_back(o.c_str());
  r = nvrtcCompileProgram(program.handle, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  const std::string log = program_log(program.handle);
  if (r != NVRTC_SUCCESS) {
    // A failed compile is never cached: keep a reproduction and name it.
    const std::string dir = knobs().dump_dir + "/failed-" + tag;
    std::string where;
    try {
      write_source_folder(dir, source, options, log);
      where = "; reproduction in " + dir;
    } catch (const std::exception& e) {
      where = std::string("; could not write a reproduction: ") + e.what();
    }
    fail(SGTOPK_ERROR_COMPILE, "NVRTC failed (" + nvrtc_error(r) + ") compiling " + source.name + " for " + arch + where +
                                   ":\n" + log);
  }
  size_t size = 0;
  r = nvrtcGetCUBINSize(program.handle, &size);
  if (r != NVRTC_SUCCESS || size == 0)
    fail(SGTOPK_ERROR_COMPILE, "NVRTC produced no cubin for " + source.name + " (" + nvrtc_error(r) + ")");
  std::vector<char> cubin(size);
  r = nvrtcGetCUBIN(program.handle, cubin.data());
  if (r != NVRTC_SUCCESS) fail(SGTOPK_ERROR_COMPILE, "NVRTC could not return the cubin: " + nvrtc_error(r));
  if (knobs().keep_sources) {
    // A debugging aid: failing to keep the source must not fail a good compile.
    const std::string dir = knobs().dump_dir + "/source-" + tag;
    try {
      write_source_folder(dir, source, options, log);
    } catch (const std::exception& e) {
      log_warning_once("keep-sources-unwritable:" + knobs().dump_dir,
                       "SGTOPK_KEEP_SOURCES=1 but the kernel source could not be written to " + dir + " (" + e.what() +
                           "); the compiled kernel is used anyway (set SGTOPK_DUMP_DIR to a writable directory)");
    }
  }
  if (log_out) *log_out = log;
  return cubin;
}

}  // namespace sgtopk::detail
