// sgtopk: the command-line tool.
//
//   sgtopk plan [problem options] [PROBLEM.toml]   plan, compile (or hit the cache), print the plan
//   sgtopk prewarm MANIFEST.toml [--jobs N]        compile every plan of a deployment manifest into the cache
//   sgtopk policy [--policy FILE] [--out FILE]     the policy in effect as TOML
//   sgtopk env                                     environment variables, cache and driver status
//   sgtopk selftest [problem options]              on a GPU: compile, run, verify against the CPU reference, time
//   sgtopk simulate [--family NAME|all] [--causal] CPU only: the sampled route's decisions over the row families
//   sgtopk help [COMMAND] | COMMAND --help | version
//
// The options are declared with CLI11 (each subcommand in tools/cli/), which
// checks their types, ranges and combinations and writes every help text;
// the problem files and manifests are parsed by tools/cli/config_files. The
// tool goes through the public C API for everything a user could do, and
// reaches into the library only for the CPU reference, the row families, the
// policy, the knobs and device memory.
//
// Exit status: 0 done; 1 a failure (a compile, a launch, a plan not stored,
// a write to standard output); 2 bad usage or input. Nothing aborts.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "tools/cli/commands.h"

namespace {

using namespace sgtopk::cli;

// "plan [--k N] ... [PROBLEM.toml]", from the subcommand's own options,
// wrapped under `indent`.
std::string synopsis(const CLI::App& sub, size_t indent) {
  std::vector<std::string> items;
  for (const CLI::Option* o : sub.get_options()) {
    if (o == sub.get_help_ptr()) continue;
    std::string item = o->get_positional() ? o->get_name(true) : o->get_name();
    if (!o->get_positional() && !o->get_type_name().empty()) item += " " + o->get_type_name();
    items.push_back(o->get_required() ? item : "[" + item + "]");
  }
  std::string out = "  " + sub.get_name();
  if (items.empty()) return out + "\n";
  size_t column = out.size();
  out += std::string(indent > column ? indent - column : 1, ' ');
  column = std::max(indent, column + 1);
  bool first = true;
  for (const std::string& item : items) {
    if (!first && column + 1 + item.size() > 110) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
      first = true;
    }
    if (!first) {
      out += ' ';
      ++column;
    }
    out += item;
    column += item.size();
    first = false;
  }
  return out + "\n";
}

// Standard output must have been written: a full disk or a closed pipe is a
// failure, not a silent exit 0.
int finish(int status) {
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int error = errno;
  std::cout.flush();  // nothing is written through it, but a library might
  if (flush_failed || std::ferror(stdout) || !std::cout) {
    std::fprintf(stderr, "sgtopk: cannot write to standard output%s%s\n", error ? ": " : "",
                 error ? std::strerror(error) : "");
    return status == 0 ? kExitFailure : status;
  }
  return status;
}

int run_cli(int argc, char** argv) {
  CLI::App app(std::string("sgtopk ") + sgtopk_version_string() +
                   ": exact top-K selection on NVIDIA GPUs, JIT-compiled and cached",
               "sgtopk");
  bool show_version = false;
  app.add_flag("--version", show_version, "print the version");
  app.require_subcommand(0, 1);

  std::vector<std::pair<CLI::App*, Runner>> commands;
  for (const auto& [name, add] : {std::pair<const char*, Runner (*)(CLI::App&)>{"plan", add_plan},
                                   {"prewarm", add_prewarm},
                                   {"policy", add_policy},
                                   {"env", add_env},
                                   {"selftest", add_selftest},
                                   {"simulate", add_simulate},
                                   {"replay", add_replay},
                                   {"capture", add_capture},
                                   {"cache", add_cache}}) {
    Runner run = add(app);
    commands.emplace_back(app.get_subcommand(name), std::move(run));
  }
  CLI::App* help = app.add_subcommand("help", "Print this overview, or one command's options");
  std::string help_topic;
  help->add_option("COMMAND", help_topic, "a command")->type_name("");
  CLI::App* version = app.add_subcommand("version", "Print the version");

  std::string footer = "Commands and their options (`sgtopk COMMAND --help` describes each):\n";
  for (const auto& [sub, run] : commands) footer += synopsis(*sub, 11);
  footer += synopsis(*help, 11) + synopsis(*version, 11);
  footer += "\nExit status: 0 done; 1 a failure (compile, launch, a plan not stored, output); 2 bad usage or input.";
  app.footer(footer);
  const std::string overview = app.help();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());  // the selected subcommand's, else the overview
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::printf("%s", app.help("", CLI::AppFormatMode::All).c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return 0;
    std::string where = "sgtopk";
    for (const CLI::App* sub : app.get_subcommands()) where += " " + sub->get_name();
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for the options.\n", where.c_str(), e.what(), where.c_str());
    return kExitUsage;
  }

  if (show_version || version->parsed()) {
    std::printf("sgtopk %s\n", sgtopk_version_string());
    return 0;
  }
  if (help->parsed()) {
    if (help_topic.empty()) {
      std::printf("%s", overview.c_str());
      return 0;
    }
    for (const auto& [sub, run] : commands) {
      if (sub->get_name() == help_topic) {
        std::printf("%s", sub->help("sgtopk").c_str());
        return 0;
      }
    }
    std::fprintf(stderr, "sgtopk help: no command '%s'\n%s", help_topic.c_str(), overview.c_str());
    return kExitUsage;
  }
  for (const auto& [sub, run] : commands) {
    if (!sub->parsed()) continue;
    try {
      return run();
    } catch (const UsageError& e) {
      std::fprintf(stderr, "sgtopk %s: %s\n", sub->get_name().c_str(), e.what());
      return kExitUsage;
    }
  }
  std::fprintf(stderr, "sgtopk: a command is needed\n%s", overview.c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  int status = kExitFailure;
  try {
    status = run_cli(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sgtopk: %s\n", e.what());
    status = kExitFailure;
  } catch (...) {
    std::fprintf(stderr, "sgtopk: unexpected error\n");
    status = kExitFailure;
  }
  return finish(status);
}
