// The README's C++ example. Exits 77 (skipped) after planning when no GPU is present.
#include <sgtopk/sgtopk.hpp>

#include <cstdio>

int main() {
  const auto problem = sgtopk::Problem().k(2048).rows(4096).width(262144).values();
  try {
    sgtopk::Plan offline(problem, sgtopk::CompileOptions().arch("sm_90"));  // no GPU needed
    std::printf("%s: workspace %zu bytes\n", offline.info().family, offline.workspace_size());
  } catch (const sgtopk::error& e) {
    std::fprintf(stderr, "compile failed: %s\n", e.what());
    return 1;
  }
  try {
    sgtopk::Plan plan(problem, sgtopk::CompileOptions().device(0).own_workspace());
    // sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT; args.scores = ...; args.values = ...;
    // plan.select(args, stream);  or  sgtopk::Graph graph(plan, args); graph.launch(stream);
    sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;
    try {
      plan.select(args, nullptr);
    } catch (const sgtopk::error& e) {
      std::printf("launch without buffers refused: %s\n", e.what());
      return e.status() == SGTOPK_ERROR_INVALID_ARGUMENT ? 0 : 1;
    }
    return 1;
  } catch (const sgtopk::error& e) {
    if (e.status() == SGTOPK_ERROR_NO_DRIVER) {
      std::printf("no GPU here (%s): skipping the launch\n", e.what());
      return 77;
    }
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
