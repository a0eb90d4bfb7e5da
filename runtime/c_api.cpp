// The C boundary: every entry point catches, records the message for
// sgtopk_last_error() on this thread, and returns a status. Nothing throws
// across it and nothing aborts.
#include <sgtopk/sgtopk.h>

#include <cstddef>
#include <memory>
#include <new>
#include <string>

#include "runtime/compiled_plan.h"
#include "runtime/driver.h"
#include "runtime/error.h"
#include "runtime/launch.h"

namespace detail = sgtopk::detail;

struct sgtopk_plan_s {
  // Shared with the graphs built from it, so destroying the plan first is safe.
  std::shared_ptr<const detail::CompiledPlan> compiled;
  std::string parameters;  // backing storage for sgtopk_plan_info strings
  std::string key_hex;
};

struct sgtopk_graph_s {
  std::shared_ptr<const detail::CompiledPlan> compiled;  // keeps the kernel and plan alive
  // One of the two, as the plan's operator.
  std::unique_ptr<detail::SelectGraph> select;
  std::unique_ptr<detail::FilterGraph> filter;
};

namespace {

thread_local std::string g_last_error;

template <typename Body>
sgtopk_status guarded(Body&& body) {
  try {
    body();
    g_last_error.clear();
    return SGTOPK_OK;
  } catch (const detail::Error& e) {
    g_last_error = e.what();
    return e.status();
  } catch (const std::bad_alloc&) {
    g_last_error = "out of host memory";
    return SGTOPK_ERROR_INTERNAL;
  } catch (const std::exception& e) {
    g_last_error = std::string("internal error: ") + e.what();
    return SGTOPK_ERROR_INTERNAL;
  } catch (...) {
    g_last_error = "internal error: unknown exception";
    return SGTOPK_ERROR_INTERNAL;
  }
}

const detail::CompiledPlan& launchable(const detail::CompiledPlan& c) {
  if (!c.kernel)
    detail::invalid_argument("this plan was compiled for " + c.plan.arch +
                             " without a device and cannot launch: compile it with options.device set to a CUDA device");
  return c;
}

// A plan (or graph) handed to the other operator's call is the caller's
// error; say which calls fit it. Checked before anything else about the launch.
const detail::CompiledPlan& of_operator(const detail::CompiledPlan& c, sgtopk_operator op, const char* call,
                                        const char* what = "plan") {
  if (c.plan.problem.op == op) return c;
  const bool filter = c.plan.problem.op == SGTOPK_OP_FILTER;
  detail::invalid_argument(std::string(call) + " takes a " + (filter ? "select" : "filter") + " " + what + "; this " +
                           what + " is a " +
                           (filter ? "filter's (op SGTOPK_OP_FILTER): use sgtopk_filter, sgtopk_filter_graph_create "
                                     "and sgtopk_filter_graph_update"
                                   : "select's (op SGTOPK_OP_SELECT): use sgtopk_select, sgtopk_graph_create and "
                                     "sgtopk_graph_update"));
}

const detail::CompiledPlan& of_operator(sgtopk_plan plan, sgtopk_operator op, const char* call) {
  if (plan == nullptr) detail::invalid_argument("plan is NULL");
  return launchable(of_operator(*plan->compiled, op, call));
}

}  // namespace

extern "C" {

const char* sgtopk_version_string(void) { return SGTOPK_VERSION_TEXT; }

const char* sgtopk_status_string(sgtopk_status status) {
  switch (status) {
    case SGTOPK_OK: return "ok";
    case SGTOPK_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case SGTOPK_ERROR_POLICY: return "policy error";
    case SGTOPK_ERROR_COMPILE: return "compile error";
    case SGTOPK_ERROR_NO_DRIVER: return "no CUDA driver";
    case SGTOPK_ERROR_CUDA: return "CUDA error";
    case SGTOPK_ERROR_UNSUPPORTED: return "unsupported";
    case SGTOPK_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char* sgtopk_route_stat_name(int slot) {
  static const char* const names[] = {
#define SGTOPK_ROUTE_STAT(slot_name, name, text) text,
#include <sgtopk/route_stats.def>
#undef SGTOPK_ROUTE_STAT
  };
  static_assert(sizeof(names) / sizeof(names[0]) == SGTOPK_ROUTE_STAT_SLOTS, "one name per slot");
  return slot >= 0 && slot < SGTOPK_ROUTE_STAT_SLOTS ? names[slot] : nullptr;
}

const char* sgtopk_last_error(void) { return g_last_error.c_str(); }

sgtopk_status sgtopk_compile(const sgtopk_problem* problem, const sgtopk_compile_options* options,
                             sgtopk_plan* out_plan) {
  return guarded([&] {
    if (out_plan == nullptr) detail::invalid_argument("out_plan is NULL");
    *out_plan = nullptr;
    auto handle = std::make_unique<sgtopk_plan_s>();
    std::shared_ptr<detail::CompiledPlan> compiled = detail::compile_plan(problem, options);
    handle->parameters = compiled->plan.parameters_text();
    handle->compiled = std::move(compiled);
    handle->key_hex = handle->compiled->key.hex();
    *out_plan = handle.release();
  });
}

sgtopk_status sgtopk_plan_destroy(sgtopk_plan plan) {
  return guarded([&] { delete plan; });
}

sgtopk_status sgtopk_workspace_size(sgtopk_plan plan, size_t* bytes) {
  return guarded([&] {
    if (plan == nullptr) detail::invalid_argument("plan is NULL");
    if (bytes == nullptr) detail::invalid_argument("bytes is NULL");
    *bytes = static_cast<size_t>(plan->compiled->plan.workspace_bytes);
  });
}

sgtopk_status sgtopk_plan_describe(sgtopk_plan plan, sgtopk_plan_info* info) {
  return guarded([&] {
    if (plan == nullptr) detail::invalid_argument("plan is NULL");
    if (info == nullptr) detail::invalid_argument("info is NULL");
    // Callers built before on_disk existed pass the shorter struct.
    constexpr size_t kFirstSize = offsetof(sgtopk_plan_info, on_disk);
    if (info->struct_size < kFirstSize)
      detail::invalid_argument("info.struct_size is " + std::to_string(info->struct_size) +
                               ": initialize it with SGTOPK_PLAN_INFO_INIT");
    const detail::CompiledPlan& c = *plan->compiled;
    info->family = c.plan.family.c_str();
    info->parameters = plan->parameters.c_str();
    info->cache_key = plan->key_hex.c_str();
    info->arch = c.plan.arch.c_str();
    info->grid[0] = c.plan.grid;
    info->grid[1] = info->grid[2] = 1;
    info->block[0] = c.plan.block;
    info->block[1] = info->block[2] = 1;
    info->dynamic_smem_bytes = c.plan.dynamic_smem_bytes;
    info->workspace_bytes = c.plan.workspace_bytes;
    info->from_cache = static_cast<int32_t>(c.source);
    info->compile_ms = c.compile_ms;
    info->load_ms = c.kernel ? c.kernel->load_ms : 0.0;
    if (info->struct_size >= sizeof(sgtopk_plan_info)) info->on_disk = c.on_disk ? 1 : 0;
  });
}

const char* sgtopk_plan_text(sgtopk_plan plan) { return plan ? plan->compiled->text.c_str() : ""; }

sgtopk_status sgtopk_select(sgtopk_plan plan, const sgtopk_select_args* args, sgtopk_stream stream) {
  return guarded([&] {
    const detail::CompiledPlan& c = of_operator(plan, SGTOPK_OP_SELECT, "sgtopk_select");
    const detail::DeviceSelectParams params = detail::make_select_params(c.plan, args, c.own_workspace.address());
    detail::launch_kernel(*c.kernel, c.plan, params, reinterpret_cast<CUstream>(stream));
  });
}

sgtopk_status sgtopk_filter(sgtopk_plan plan, const sgtopk_filter_args* args, sgtopk_stream stream) {
  return guarded([&] {
    const detail::CompiledPlan& c = of_operator(plan, SGTOPK_OP_FILTER, "sgtopk_filter");
    const detail::DeviceFilterParams params = detail::make_filter_params(c.plan, args, c.own_workspace.address());
    detail::launch_kernel(*c.kernel, c.plan, params, reinterpret_cast<CUstream>(stream));
  });
}

sgtopk_status sgtopk_graph_create(sgtopk_plan plan, const sgtopk_select_args* args, sgtopk_graph* out_graph) {
  return guarded([&] {
    if (out_graph == nullptr) detail::invalid_argument("out_graph is NULL");
    *out_graph = nullptr;
    const detail::CompiledPlan& c = of_operator(plan, SGTOPK_OP_SELECT, "sgtopk_graph_create");
    const detail::DeviceSelectParams params = detail::make_select_params(c.plan, args, c.own_workspace.address());
    auto graph = std::make_unique<sgtopk_graph_s>();
    graph->compiled = plan->compiled;
    graph->select = std::make_unique<detail::SelectGraph>(*c.kernel, c.plan, params);
    *out_graph = graph.release();
  });
}

sgtopk_status sgtopk_graph_update(sgtopk_graph graph, const sgtopk_select_args* args) {
  return guarded([&] {
    if (graph == nullptr) detail::invalid_argument("graph is NULL");
    const detail::CompiledPlan& c =
        launchable(of_operator(*graph->compiled, SGTOPK_OP_SELECT, "sgtopk_graph_update", "graph"));
    graph->select->update(detail::make_select_params(c.plan, args, c.own_workspace.address()));
  });
}

sgtopk_status sgtopk_filter_graph_create(sgtopk_plan plan, const sgtopk_filter_args* args, sgtopk_graph* out_graph) {
  return guarded([&] {
    if (out_graph == nullptr) detail::invalid_argument("out_graph is NULL");
    *out_graph = nullptr;
    const detail::CompiledPlan& c = of_operator(plan, SGTOPK_OP_FILTER, "sgtopk_filter_graph_create");
    const detail::DeviceFilterParams params = detail::make_filter_params(c.plan, args, c.own_workspace.address());
    auto graph = std::make_unique<sgtopk_graph_s>();
    graph->compiled = plan->compiled;
    graph->filter = std::make_unique<detail::FilterGraph>(*c.kernel, c.plan, params);
    *out_graph = graph.release();
  });
}

sgtopk_status sgtopk_filter_graph_update(sgtopk_graph graph, const sgtopk_filter_args* args) {
  return guarded([&] {
    if (graph == nullptr) detail::invalid_argument("graph is NULL");
    const detail::CompiledPlan& c =
        launchable(of_operator(*graph->compiled, SGTOPK_OP_FILTER, "sgtopk_filter_graph_update", "graph"));
    graph->filter->update(detail::make_filter_params(c.plan, args, c.own_workspace.address()));
  });
}

sgtopk_status sgtopk_graph_launch(sgtopk_graph graph, sgtopk_stream stream) {
  return guarded([&] {
    if (graph == nullptr) detail::invalid_argument("graph is NULL");
    if (graph->select) graph->select->launch(reinterpret_cast<CUstream>(stream));
    else graph->filter->launch(reinterpret_cast<CUstream>(stream));
  });
}

sgtopk_status sgtopk_graph_destroy(sgtopk_graph graph) {
  return guarded([&] { delete graph; });
}

}  // extern "C"
