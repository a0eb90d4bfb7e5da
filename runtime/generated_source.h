// Stage 3's value: the generated source, what NVRTC compiles. It knows
// nothing of plans, so the compiler below it does not either.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sgtopk::detail {

struct GeneratedSource {
  std::string name;  // e.g. "sgtopk_select_direct_exact.cu"
  std::string text;
  std::string entry;
  // Every header NVRTC may include: (include name, exact text).
  std::vector<std::pair<std::string, std::string>> headers;
};

}  // namespace sgtopk::detail
