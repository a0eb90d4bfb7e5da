// Errors inside the library: thrown as sgtopk::Error, caught at the C
// boundary (c_api.cpp) and turned into a status plus sgtopk_last_error().
#pragma once

#include <sgtopk/sgtopk.h>

#include <stdexcept>
#include <string>

namespace sgtopk::detail {

class Error : public std::runtime_error {
 public:
  Error(sgtopk_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  sgtopk_status status() const noexcept { return status_; }

 private:
  sgtopk_status status_;
};

[[noreturn]] inline void fail(sgtopk_status status, const std::string& message) { throw Error(status, message); }
[[noreturn]] inline void invalid_argument(const std::string& message) {
  throw Error(SGTOPK_ERROR_INVALID_ARGUMENT, message);
}

}  // namespace sgtopk::detail
