// The kernel templates (templates/sgtopk/*.cuh), embedded at build time.
#pragma once

#include <vector>

namespace sgtopk::detail {

struct EmbeddedHeader {
  const char* name;  // include name, e.g. "sgtopk/keys.cuh"
  const char* text;
};

const std::vector<EmbeddedHeader>& embedded_headers();

}  // namespace sgtopk::detail
