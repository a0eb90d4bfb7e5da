// Diagnostics on stderr, filtered by SGTOPK_VERBOSE (0 quiet, 1 warnings, 2 info).
#pragma once

#include <string>

namespace sgtopk::detail {

void log_warning(const std::string& message);
void log_info(const std::string& message);
// Warn once per process for a given topic (e.g. "cache-dir-unwritable").
void log_warning_once(const std::string& topic, const std::string& message);

}  // namespace sgtopk::detail
