// Header-only C++ wrapper over the C API: RAII handles, exceptions on the
// C++ side of the boundary (the C API itself never throws).
#pragma once

#include <sgtopk/sgtopk.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace sgtopk {

class error : public std::runtime_error {
 public:
  error(sgtopk_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  sgtopk_status status() const noexcept { return status_; }

 private:
  sgtopk_status status_;
};

inline void check(sgtopk_status status) {
  if (status != SGTOPK_OK) throw error(status, sgtopk_last_error());
}

// The problem, built fluently: Problem().k(2048).rows(4096).width(262144).values(),
// or for the filter: Problem().filter().rows(256).width(128256), with
// .mask().candidates(64).sample() for more outputs than the mask
struct Problem {
  sgtopk_problem raw = SGTOPK_PROBLEM_INIT;
  Problem& filter() { raw.op = SGTOPK_OP_FILTER; raw.k = 0; return *this; }
  Problem& k(int32_t v) { raw.k = v; return *this; }
  Problem& rows(int64_t v) { raw.rows = v; return *this; }
  Problem& width(int64_t v) { raw.width = v; return *this; }
  Problem& pitch(int64_t v) { raw.pitch = v; return *this; }
  Problem& dtype(sgtopk_dtype v) { raw.dtype = v; return *this; }
  Problem& out_pitch(int64_t v) { raw.out_pitch = v; return *this; }
  Problem& values(bool on = true) { return flag(SGTOPK_VALUES, on); }
  Problem& sorted(bool on = true) { return flag(SGTOPK_SORTED, on); }
  Problem& starts(bool on = true) { return flag(SGTOPK_STARTS, on); }
  Problem& route_stats(bool on = true) { return flag(SGTOPK_ROUTE_STATS, on); }
  // The filter's outputs (flags 0 is the mask alone): the masked rows, the
  // kept tokens in order (capacity a row; out_pitch 0: the capacity), a
  // sampled token.
  Problem& mask(bool on = true) { return flag(SGTOPK_FILTER_MASK, on); }
  Problem& candidates(int32_t capacity) { raw.k = capacity; return flag(SGTOPK_FILTER_CANDIDATES, true); }
  Problem& sample(bool on = true) { return flag(SGTOPK_FILTER_SAMPLE, on); }

 private:
  Problem& flag(uint32_t f, bool on) {
    raw.flags = on ? (raw.flags | f) : (raw.flags & ~f);
    return *this;
  }
};

struct CompileOptions {
  sgtopk_compile_options raw = SGTOPK_COMPILE_OPTIONS_INIT;
  std::string arch_, policy_file_, policy_toml_, family_;
  CompileOptions& device(int ordinal) { raw.device = ordinal; return *this; }
  CompileOptions& arch(std::string v) { arch_ = std::move(v); return *this; }
  CompileOptions& policy_file(std::string v) { policy_file_ = std::move(v); return *this; }
  CompileOptions& policy_toml(std::string v) { policy_toml_ = std::move(v); return *this; }
  CompileOptions& family(std::string v) { family_ = std::move(v); return *this; }
  CompileOptions& own_workspace(bool on = true) { raw.own_workspace = on ? 1 : 0; return *this; }
  const sgtopk_compile_options* get() {
    raw.arch = arch_.empty() ? nullptr : arch_.c_str();
    raw.policy_file = policy_file_.empty() ? nullptr : policy_file_.c_str();
    raw.policy_toml = policy_toml_.empty() ? nullptr : policy_toml_.c_str();
    raw.family = family_.empty() ? nullptr : family_.c_str();
    return &raw;
  }
};

class Graph;

class Plan {
 public:
  Plan(const Problem& problem, CompileOptions options) { check(sgtopk_compile(&problem.raw, options.get(), &plan_)); }
  Plan(Plan&& other) noexcept : plan_(std::exchange(other.plan_, nullptr)) {}
  Plan& operator=(Plan&& other) noexcept {
    std::swap(plan_, other.plan_);
    return *this;
  }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() { sgtopk_plan_destroy(plan_); }

  size_t workspace_size() const {
    size_t bytes = 0;
    check(sgtopk_workspace_size(plan_, &bytes));
    return bytes;
  }
  sgtopk_plan_info info() const {
    sgtopk_plan_info i = SGTOPK_PLAN_INFO_INIT;
    check(sgtopk_plan_describe(plan_, &i));
    return i;
  }
  std::string text() const { return sgtopk_plan_text(plan_); }
  void select(const sgtopk_select_args& args, sgtopk_stream stream) const { check(sgtopk_select(plan_, &args, stream)); }
  void filter(const sgtopk_filter_args& args, sgtopk_stream stream) const { check(sgtopk_filter(plan_, &args, stream)); }
  sgtopk_plan get() const { return plan_; }

 private:
  sgtopk_plan plan_ = nullptr;
};

class Graph {
 public:
  Graph(const Plan& plan, const sgtopk_select_args& args) { check(sgtopk_graph_create(plan.get(), &args, &graph_)); }
  Graph(const Plan& plan, const sgtopk_filter_args& args) { check(sgtopk_filter_graph_create(plan.get(), &args, &graph_)); }
  Graph(Graph&& other) noexcept : graph_(std::exchange(other.graph_, nullptr)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() { sgtopk_graph_destroy(graph_); }
  void update(const sgtopk_select_args& args) { check(sgtopk_graph_update(graph_, &args)); }
  void update(const sgtopk_filter_args& args) { check(sgtopk_filter_graph_update(graph_, &args)); }
  void launch(sgtopk_stream stream) { check(sgtopk_graph_launch(graph_, stream)); }

 private:
  sgtopk_graph graph_ = nullptr;
};

}  // namespace sgtopk
