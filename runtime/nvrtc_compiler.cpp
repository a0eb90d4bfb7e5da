#include "runtime/nvrtc_compiler.h"

#include <nvrtc.h>

#include <filesystem>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>

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

// Writes `text` to `path`, throwing (naming the file) when it cannot be
// written: an unchecked ofstream fails silently.
void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
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
  fs::create_directories(fs::path(dir) / "include");
  write_text(fs::path(dir) / source.name, source.text);
  for (const auto& [name, text] : source.headers) {
    fs::path path = fs::path(dir) / "include" / name;
    fs::create_directories(path.parent_path());
    write_text(path, text);
  }
  std::string opts;
  for (const auto& o : options) opts += o + "\n";
  opts += "-Iinclude\n";
  write_text(fs::path(dir) / "options.txt", opts);
  if (!log.empty()) write_text(fs::path(dir) / "nvrtc.log", log);
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
