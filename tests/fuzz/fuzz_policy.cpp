// Fuzz target: the policy TOML parser (runtime/policy.h).
//
// Property: parse_policy_string either
//   - returns a Policy that validate_policy accepts and that round-trips
//     through to_toml() to an equal Policy, or
//   - throws sgtopk::detail::Error with SGTOPK_ERROR_POLICY and a message.
// Anything else (another exception, another status, a crash, a sanitizer
// report) is a finding.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "runtime/error.h"
#include "runtime/policy.h"
#include "fuzz_common.h"

namespace detail = sgtopk::detail;

namespace {

[[noreturn]] void finding(const std::string& what) { sgtopk_fuzz::finding("policy", what); }

void check_round_trip(const detail::Policy& policy) {
  try {
    detail::validate_policy(policy, "<fuzz result>");
  } catch (const detail::Error& e) {
    finding(std::string("a parsed policy fails validate_policy: ") + e.what());
  }
  const std::string text = policy.to_toml();
  detail::Policy again;
  try {
    again = detail::parse_policy_string(text, "<to_toml>");
  } catch (const std::exception& e) {
    finding(std::string("to_toml() of a parsed policy does not parse: ") + e.what() + "\n--- to_toml():\n" + text);
  }
  if (!(again == policy)) finding("parse_policy_string(to_toml()) != the policy\n--- to_toml():\n" + text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  detail::Policy policy;
  try {
    policy = detail::parse_policy_string(text, "<fuzz>");
  } catch (const detail::Error& e) {
    if (e.status() != SGTOPK_ERROR_POLICY)
      finding("parse_policy_string threw status " + std::to_string(e.status()) + " (want SGTOPK_ERROR_POLICY): " +
              e.what());
    if (std::string_view(e.what()).empty()) finding("parse_policy_string threw an empty message");
    return 0;
  } catch (const std::exception& e) {
    finding(std::string("parse_policy_string threw a non-sgtopk exception: ") + e.what());
  } catch (...) {
    finding("parse_policy_string threw a non-std exception");
  }
  check_round_trip(policy);
  return 0;
}
