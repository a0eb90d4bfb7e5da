#include "runtime/log.h"

#include <cstdio>
#include <mutex>
#include <set>

#include "runtime/knobs.h"

namespace sgtopk::detail {

namespace {
std::mutex g_log_mutex;
}

void log_warning(const std::string& message) {
  if (knobs().verbose < 1) return;
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::fprintf(stderr, "sgtopk: warning: %s\n", message.c_str());
}

void log_info(const std::string& message) {
  if (knobs().verbose < 2) return;
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::fprintf(stderr, "sgtopk: %s\n", message.c_str());
}

void log_warning_once(const std::string& topic, const std::string& message) {
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    if (!seen.insert(topic).second) return;
  }
  log_warning(message);
}

}  // namespace sgtopk::detail
