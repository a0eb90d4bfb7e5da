// Stage 3: the generated source. A short specialization prelude (the plan's
// constants as a Config struct) and an extern "C" entry over an agent template.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/plan.h"

namespace sgtopk {

struct GeneratedSource {
  std::string name;    // e.g. "sgtopk_select_direct_exact.cu"
  std::string text;
  std::string entry;
  // Every header NVRTC may include: (include name, exact text).
  std::vector<std::pair<std::string, std::string>> headers;
};

GeneratedSource generate_source(const Plan& plan);

}  // namespace sgtopk
