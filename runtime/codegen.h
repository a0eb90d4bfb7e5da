// Stage 3: the generated source. A short specialization prelude (the plan's
// constants as a Config struct) and an extern "C" entry over an agent template.
#pragma once

#include "runtime/generated_source.h"
#include "runtime/plan.h"

namespace sgtopk::detail {

GeneratedSource generate_source(const Plan& plan);

}  // namespace sgtopk::detail
