/* The README's C example: compile a plan (no GPU needed for that), then, when
 * a GPU is present, select the top-2048 of every row. Exits 77 (skipped)
 * after the compile step on a machine without a GPU. */
#include <sgtopk/sgtopk.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  sgtopk_problem problem = SGTOPK_PROBLEM_INIT;
  problem.k = 2048;
  problem.rows = 4096;     /* row capacity */
  problem.width = 262144;  /* longest row */

  /* Compile for a named architecture: works on a build box without a GPU. */
  sgtopk_compile_options options = SGTOPK_COMPILE_OPTIONS_INIT;
  options.arch = "sm_90";
  sgtopk_plan plan = NULL;
  if (sgtopk_compile(&problem, &options, &plan) != SGTOPK_OK) {
    fprintf(stderr, "compile failed: %s\n", sgtopk_last_error());
    return 1;
  }
  sgtopk_plan_info info = SGTOPK_PLAN_INFO_INIT;
  sgtopk_plan_describe(plan, &info);
  size_t workspace = 0;
  sgtopk_workspace_size(plan, &workspace);
  printf("family %s, grid %u x %u threads, workspace %zu bytes, key %s\n", info.family, info.grid[0], info.block[0],
         workspace, info.cache_key);
  sgtopk_plan_destroy(plan);

  /* Bind to device 0 to launch; the plan owns its workspace. */
  options.arch = NULL;
  options.device = 0;
  options.own_workspace = 1;
  sgtopk_status status = sgtopk_compile(&problem, &options, &plan);
  if (status == SGTOPK_ERROR_NO_DRIVER) {
    printf("no GPU here (%s): skipping the launch\n", sgtopk_last_error());
    return 77;
  }
  if (status != SGTOPK_OK) {
    fprintf(stderr, "compile failed: %s\n", sgtopk_last_error());
    return 1;
  }
  /* With device buffers from your framework (CUdeviceptr / data_ptr()):
   *   sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;
   *   args.scores = scores; args.lengths = lengths; args.indices = indices;
   *   sgtopk_select(plan, &args, stream);      // or capture it in a graph
   * Here we only check that a launch without buffers is refused cleanly. */
  sgtopk_select_args args = SGTOPK_SELECT_ARGS_INIT;
  status = sgtopk_select(plan, &args, NULL);
  printf("launch without buffers: %s (%s)\n", sgtopk_status_string(status), sgtopk_last_error());
  sgtopk_plan_destroy(plan);
  return status == SGTOPK_ERROR_INVALID_ARGUMENT ? 0 : 1;
}
