#include "cache/cache_key.h"

#include <xxhash.h>

#include <cstdio>
#include <string_view>

namespace sgtopk::detail {

namespace {

// Every variable-length field is written as <u64 little-endian length><bytes>,
// and every list as <u64 count> followed by its fields, so no two different
// inputs serialize to the same bytes (e.g. source "ab" + target "c" versus
// source "a" + target "bc").
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void put_field(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Manifest values are single lines; escape the two characters that could break that.
std::string escape_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string CacheKey::hex() const { return hex64(high) + hex64(low); }

CacheKey make_cache_key(const CacheKeyInputs& in) {
  std::string buf;
  buf.reserve(in.source.size() + 4096);
  put_field(buf, "sgtopk-cache-key");
  put_u64(buf, static_cast<uint64_t>(kCacheFormatVersion));
  put_field(buf, in.source);
  put_u64(buf, in.headers.size());
  for (const auto& [name, text] : in.headers) {
    put_field(buf, name);
    put_field(buf, text);
  }
  put_u64(buf, in.options.size());
  for (const auto& opt : in.options) put_field(buf, opt);
  put_field(buf, in.target);
  put_field(buf, in.nvrtc_version);
  put_field(buf, in.library_version);

  const XXH128_hash_t h = XXH3_128bits(buf.data(), buf.size());
  return CacheKey{h.high64, h.low64};
}

std::string make_manifest(const CacheKeyInputs& in) {
  std::string m;
  m += "sgtopk-cache-manifest\n";
  m += "format_version=" + std::to_string(kCacheFormatVersion) + "\n";
  m += "target=" + escape_line(in.target) + "\n";
  m += "nvrtc_version=" + escape_line(in.nvrtc_version) + "\n";
  m += "library_version=" + escape_line(in.library_version) + "\n";
  m += "options=" + std::to_string(in.options.size()) + "\n";
  for (const auto& opt : in.options) m += "option=" + escape_line(opt) + "\n";
  m += "source_xxh3=" + hex64(XXH3_64bits(in.source.data(), in.source.size())) + "\n";
  m += "headers=" + std::to_string(in.headers.size()) + "\n";
  for (const auto& [name, text] : in.headers)
    m += "header " + escape_line(name) + "=" + hex64(XXH3_64bits(text.data(), text.size())) + "\n";
  return m;
}

}  // namespace sgtopk::detail
