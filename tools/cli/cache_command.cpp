// `sgtopk cache stat | verify | prune --max-bytes N | clear [--dir DIR]`:
// the on-disk kernel cache (cache/maintenance.h), by default the directory
// the library uses ($SGTOPK_CACHE_DIR or its default).

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <memory>

#include "cache/maintenance.h"
#include "runtime/knobs.h"
#include "tools/cli/commands.h"

namespace sgtopk::cli {

namespace {

struct CacheCommand {
  std::string dir;
  int64_t max_bytes = -1;
  CLI::App *stat = nullptr, *verify = nullptr, *prune = nullptr, *clear = nullptr;
};

std::string when(int64_t ns) {
  if (ns <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  char text[32];
  std::tm tm {};
  ::gmtime_r(&t, &tm);
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

int report_problems(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) std::fprintf(stderr, "sgtopk cache: %s\n", p.c_str());
  return problems.empty() ? 0 : kExitFailure;
}

int run_cache(const CacheCommand& c) {
  const std::string dir = c.dir.empty() ? detail::knobs().cache_dir : c.dir;
  const detail::CacheListing listing = detail::list_cache(dir);
  if (!listing.exists) {
    if (c.stat->parsed() || c.clear->parsed()) {  // nothing cached: nothing to say or remove
      std::printf("cache %s: no such directory (nothing cached)\n", dir.c_str());
      return 0;
    }
    throw UsageError(dir + ": no such cache directory");
  }
  if (c.stat->parsed()) {
    std::printf("cache %s\n  entries       %zu\n  entry bytes   %" PRIu64 "\n  locks         %d\n  temporaries   %d\n",
                dir.c_str(), listing.entries.size(), listing.entry_bytes, listing.locks, listing.temporaries);
    if (!listing.entries.empty())
      std::printf("  last used     %s (oldest %s)\n", when(listing.entries.back().last_use_ns).c_str(),
                  when(listing.entries.front().last_use_ns).c_str());
    return report_problems(listing.problems);
  }
  if (c.verify->parsed()) {
    int bad = 0;
    for (const detail::CacheEntryFile& e : listing.entries) {
      const std::string why = detail::verify_cache_entry(e.path);
      if (why.empty()) continue;
      ++bad;
      std::printf("INVALID %s: %s\n", e.path.string().c_str(), why.c_str());
    }
    std::printf("verified %zu entries in %s: %zu valid, %d invalid\n", listing.entries.size(), dir.c_str(),
                listing.entries.size() - static_cast<size_t>(bad), bad);
    const int listed = report_problems(listing.problems);
    return bad > 0 ? kExitFailure : listed;
  }
  const detail::CacheRemoval r = c.prune->parsed() ? detail::prune_cache(dir, static_cast<uint64_t>(c.max_bytes))
                                                   : detail::clear_cache(dir);
  std::printf("%s %s: removed %d entries (%" PRIu64 " bytes) and %d lock or temporary files; %" PRIu64
              " entry bytes left\n",
              c.prune->parsed() ? "pruned" : "cleared", dir.c_str(), r.removed, r.removed_bytes, r.removed_other,
              r.kept_bytes);
  return report_problems(r.errors);
}

}  // namespace

Runner add_cache(CLI::App& app) {
  auto cmd = std::make_shared<CacheCommand>();
  CLI::App* sub = app.add_subcommand("cache", "The on-disk kernel cache: stat, verify, prune, clear");
  sub->require_subcommand(1, 1);
  sub->add_option("--dir", cmd->dir, "the cache directory (default: $SGTOPK_CACHE_DIR or the library's default)")
      ->type_name("DIR");
  cmd->stat = sub->add_subcommand("stat", "Entries, their bytes, locks and temporaries, the last use");
  cmd->verify = sub->add_subcommand("verify", "Check every entry (header, manifest, checksums, trust); exit 1 if one is invalid");
  cmd->prune = sub->add_subcommand("prune", "Remove the least recently used entries until the rest hold at most N bytes");
  cmd->prune->add_option("--max-bytes", cmd->max_bytes, "bytes the entries may keep")
      ->type_name("N")
      ->required()
      ->transform(integer_in(0, INT64_MAX, "max_bytes"));
  cmd->clear = sub->add_subcommand("clear", "Remove every entry, lock and temporary file (nothing else)");
  for (CLI::App* s : {cmd->stat, cmd->verify, cmd->prune, cmd->clear})
    s->add_option("--dir", cmd->dir, "the cache directory (default: $SGTOPK_CACHE_DIR or the library's default)")
        ->type_name("DIR");
  return [cmd] { return run_cache(*cmd); };
}

}  // namespace sgtopk::cli
