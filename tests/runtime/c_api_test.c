/* The C API of grove_runtime (grove/grove_runtime.h), used from plain C as an
 * application would: sparse_life's AOT module (the ctest fixture writes it;
 * GROVE_TEST_LIFE_MODULE names it) loaded, seeded and stepped, its cells
 * compared with a Game of Life model written here, and every kind of
 * failure answered with its code and a message. With the argument "cuda",
 * the same for the CUDA module beside it (life128_cuda.grove), on the GPU of
 * grove_options.cuda_device. Exit status 0: all passed; 77: skipped (no CUDA
 * driver, said on stdout). */
#include <grove/grove_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 128
#define PATCH 40

static int failures = 0;

#define CHECK(cond)                                                                                   \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond,         \
              grove_last_error());                                                                    \
      ++failures;                                                                                     \
    }                                                                                                 \
  } while (0)

/* A call that must fail with `code` and a message containing `text`. */
#define CHECK_FAILS(call, code, text)                                                                 \
  do {                                                                                                \
    grove_result r_ = (call);                                                                         \
    if (r_ != (code) || strstr(grove_last_error(), (text)) == NULL) {                                 \
      fprintf(stderr, "%s:%d: %s gave %s (\"%s\"), expected %s with \"%s\"\n", __FILE__, __LINE__,   \
              #call, grove_result_name(r_), grove_last_error(), #code, text);                         \
      ++failures;                                                                                     \
    }                                                                                                 \
  } while (0)

/* The seed kernel's hash: cell (i, j) of a patch comes alive when it is 0 mod 3. */
static int seeded(int i, int j, unsigned salt) {
  unsigned h = ((unsigned)i * 0x9E3779B1u) ^ ((unsigned)j * 0x85EBCA77u) ^ salt;
  h = (h ^ (h >> 15)) * 0x2C1B3C6Du;
  h = h ^ (h >> 12);
  return h % 3u == 0u;
}

static void life_step(const int* in, int* out) {
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      int c = 0;
      for (int di = -1; di <= 1; ++di)
        for (int dj = -1; dj <= 1; ++dj) {
          int a = i + di, b = j + dj;
          if ((di != 0 || dj != 0) && a >= 0 && a < N && b >= 0 && b < N) c += in[a * N + b];
        }
      out[i * N + j] = c == 3 || (c == 2 && in[i * N + j] == 1);
    }
}

static int same_cells(const grove_tree* world, const int* model) {
  static int32_t alive[N * N];
  if (grove_tree_copy_out(world, "alive", GROVE_I32, alive, N * N) != GROVE_OK) return 0;
  for (int k = 0; k < N * N; ++k)
    if (alive[k] != model[k]) {
      fprintf(stderr, "cell (%d, %d): grove %d, model %d\n", k / N, k % N, alive[k], model[k]);
      return 0;
    }
  return 1;
}

int main(int argc, char** argv) {
  const char* vulkan_path = getenv("GROVE_TEST_LIFE_MODULE");
  if (vulkan_path == NULL) {
    fprintf(stderr, "GROVE_TEST_LIFE_MODULE is not set (ctest sets it)\n");
    return 2;
  }
  const int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
  static char path[4096];
  const size_t stem = strlen(vulkan_path) > 6 ? strlen(vulkan_path) - 6 : 0; /* less ".grove" */
  if (stem + 16 > sizeof path) return 2;
  if (cuda) {
    memcpy(path, vulkan_path, stem);
    strcpy(path + stem, "_cuda.grove");
  } else {
    strcpy(path, vulkan_path);
  }
  grove_options options;
  memset(&options, 0, sizeof options);

  /* What is not a module, or not there. */
  grove_module* m = NULL;
  CHECK_FAILS(grove_module_load("/nonexistent/life.grove", NULL, &m), GROVE_ERROR_IO, "/nonexistent/life.grove");
  /* A directory (was GROVE_ERROR_INTERNAL, "basic_filebuf::underflow"). */
  CHECK_FAILS(grove_module_load("/tmp", NULL, &m), GROVE_ERROR_IO, "'/tmp': it is a directory");
  CHECK(m == NULL);
  const char junk[] = "this is no Grove module, just some bytes";
  CHECK_FAILS(grove_module_load_bytes(junk, sizeof junk, "junk", NULL, &m), GROVE_ERROR_FORMAT, "junk");
  CHECK_FAILS(grove_module_load(NULL, NULL, &m), GROVE_ERROR_INVALID_ARGUMENT, "the path is NULL");

  /* The module and what it holds. */
  if (cuda) {
    options.cuda_device = "no such gpu";
    const grove_result r = grove_module_load(path, &options, &m);
    if (r == GROVE_ERROR_DEVICE && strstr(grove_last_error(), "no CUDA driver was found") != NULL) {
      printf("skipped: the CUDA module needs a CUDA driver and GPU: %s\n", grove_last_error());
      return failures == 0 ? 77 : 1;
    }
    CHECK(r == GROVE_ERROR_DEVICE && strstr(grove_last_error(), "runtime::Options::cuda_device is \"no such gpu\"") != NULL);
    options.cuda_device = NULL;
  }
  CHECK(grove_module_load(path, &options, &m) == GROVE_OK);
  if (m == NULL) return 1;
  size_t kernels = 0, types = 0;
  const char* name = NULL;
  CHECK(grove_module_kernel_count(m, &kernels) == GROVE_OK && kernels == 5);
  CHECK(grove_module_kernel_name(m, 0, &name) == GROVE_OK && strcmp(name, "seed") == 0);
  CHECK(grove_module_kernel_name(m, 4, &name) == GROVE_OK && strcmp(name, "snapshot") == 0);
  CHECK_FAILS(grove_module_kernel_name(m, 5, &name), GROVE_ERROR_INVALID_ARGUMENT, "kernel 5 of a module with 5");
  CHECK(grove_module_tree_type_count(m, &types) == GROVE_OK && types == 1);
  CHECK(grove_module_tree_type_name(m, 0, &name) == GROVE_OK && strcmp(name, "life") == 0);

  grove_tree* world = NULL;
  CHECK_FAILS(grove_module_instantiate(m, "grid", "w", &world), GROVE_ERROR_NOT_FOUND, "no tree type 'grid' (it has: life)");
  CHECK_FAILS(grove_module_tree(m, "life", &world), GROVE_ERROR_INVALID_ARGUMENT, "make instances with Module::instantiate");
  CHECK(grove_module_instantiate(m, "life", "world", &world) == GROVE_OK);
  if (world == NULL) return 1;
  int64_t elements = 0;
  CHECK(grove_tree_num_elements(world, "alive", &elements) == GROVE_OK && elements == N * N);

  /* Seeding and stepping, against the model. */
  static int model[N * N], next[N * N];
  grove_arg seed[4] = {grove_arg_tree(world), grove_arg_i32(30), grove_arg_i32(44), grove_arg_u32(7)};
  CHECK(grove_module_launch(m, "seed", seed, 4) == GROVE_OK);
  for (int i = 30; i < 30 + PATCH; ++i)
    for (int j = 44; j < 44 + PATCH; ++j) model[i * N + j] = seeded(i, j, 7);
  CHECK(same_cells(world, model));
  grove_arg tree_only[1] = {grove_arg_tree(world)};
  for (int step = 0; step < 5; ++step) {
    CHECK(grove_module_launch(m, "count", tree_only, 1) == GROVE_OK);
    CHECK(grove_module_launch(m, "update", tree_only, 1) == GROVE_OK);
    CHECK(grove_module_launch(m, "prune", tree_only, 1) == GROVE_OK);
    life_step(model, next);
    memcpy(model, next, sizeof model);
  }
  CHECK(grove_module_sync(m) == GROVE_OK);
  CHECK(same_cells(world, model));
  const char* report = NULL;
  CHECK_FAILS(grove_module_profile_report(m, &report), GROVE_ERROR_INVALID_ARGUMENT, "Options::profile");

  /* A profiled module: each kernel's tasks, launched as often as they were. */
  {
    grove_options profiled = options;
    profiled.profile = 1;
    grove_module* p = NULL;
    grove_tree* w = NULL;
    CHECK(grove_module_load(path, &profiled, &p) == GROVE_OK);
    CHECK(p != NULL && grove_module_instantiate(p, "life", "w", &w) == GROVE_OK);
    grove_arg w_seed[4] = {grove_arg_tree(w), grove_arg_i32(30), grove_arg_i32(44), grove_arg_u32(7)};
    grove_arg w_only[1] = {grove_arg_tree(w)};
    CHECK(grove_module_launch(p, "seed", w_seed, 4) == GROVE_OK);
    for (int step = 0; step < 2; ++step) CHECK(grove_module_launch(p, "count", w_only, 1) == GROVE_OK);
    CHECK(grove_module_profile_report(p, &report) == GROVE_OK);
    CHECK(report != NULL && strstr(report, "Grove profile") != NULL && strstr(report, "\n  count") != NULL &&
          strstr(report, "\n  seed") != NULL && strstr(report, "struct_for") != NULL);
    CHECK_FAILS(grove_module_profile_report(p, NULL), GROVE_ERROR_INVALID_ARGUMENT, "report is NULL");
    grove_tree_release(w);
    grove_module_release(p);
  }

  /* Reads and writes by name; a write activates its block. */
  int64_t corner[2] = {120, 3};
  int32_t v = -1;
  const int32_t one = 1;
  CHECK(grove_tree_read(world, "alive", corner, 2, GROVE_I32, &v) == GROVE_OK && v == model[120 * N + 3]);
  CHECK(grove_tree_write(world, "alive", corner, 2, GROVE_I32, &one) == GROVE_OK);
  double as_double = 0;
  CHECK(grove_tree_read(world, "alive", corner, 2, GROVE_F64, &as_double) == GROVE_OK && as_double == 1.0);

  /* Misuse: each with its code, the module usable after. */
  int64_t outside[2] = {N, 0};
  CHECK_FAILS(grove_tree_read(world, "alive", outside, 2, GROVE_I32, &v), GROVE_ERROR_INVALID_ARGUMENT,
              "index 128 on axis 0 is outside [0, 128)");
  CHECK_FAILS(grove_tree_read(world, "colour", corner, 2, GROVE_I32, &v), GROVE_ERROR_NOT_FOUND,
              "no field 'colour'");
  CHECK_FAILS(grove_tree_read(world, "alive", corner, 2, (grove_type)99, &v), GROVE_ERROR_INVALID_ARGUMENT,
              "no grove_type");
  CHECK_FAILS(grove_module_launch(m, "explode", tree_only, 1), GROVE_ERROR_NOT_FOUND, "no kernel 'explode'");
  CHECK_FAILS(grove_module_launch(m, "seed", seed, 3), GROVE_ERROR_INVALID_ARGUMENT, "takes 3 number argument(s)");
  grove_arg bad_seed[4] = {grove_arg_tree(world), grove_arg_f64(1e12), grove_arg_i32(0), grove_arg_u32(1)};
  CHECK_FAILS(grove_module_launch(m, "seed", bad_seed, 4), GROVE_ERROR_INVALID_ARGUMENT, "argument 'x0' (i32)");
  /* Numbers a declared type cannot hold, and union members that do not
   * hold a value of their own type: refused, naming the kernel, the
   * argument and both types; nothing is launched. */
  grove_arg fraction[4] = {grove_arg_tree(world), grove_arg_f64(2.5), grove_arg_i32(0), grove_arg_u32(1)};
  CHECK_FAILS(grove_module_launch(m, "seed", fraction, 4), GROVE_ERROR_INVALID_ARGUMENT,
              "kernel 'seed' of module");
  CHECK(strstr(grove_last_error(), "argument 'x0' (i32) was given 2.5 (f64), which is not a whole number") != NULL);
  grove_arg wide_i8[4] = {grove_arg_tree(world), grove_arg_i32(0), grove_arg_i32(0), grove_arg_u32(1)};
  wide_i8[1].type = GROVE_I8;
  wide_i8[1].value.i = 300;
  CHECK_FAILS(grove_module_launch(m, "seed", wide_i8, 4), GROVE_ERROR_INVALID_ARGUMENT,
              "grove_module_launch('seed'): argument 1 is of type i8 but holds 300");
  grove_arg wide_i32[4] = {grove_arg_tree(world), grove_arg_i32(0), grove_arg_i32(0), grove_arg_u32(1)};
  wide_i32[2].value.i = (int64_t)1 << 40;
  CHECK_FAILS(grove_module_launch(m, "seed", wide_i32, 4), GROVE_ERROR_INVALID_ARGUMENT,
              "argument 2 is of type i32 but holds 1099511627776");
  grove_arg tree_for_number[4] = {grove_arg_tree(world), grove_arg_tree(world), grove_arg_i32(0), grove_arg_u32(1)};
  CHECK_FAILS(grove_module_launch(m, "seed", tree_for_number, 4), GROVE_ERROR_INVALID_ARGUMENT,
              "kernel 'seed' of module");
  CHECK(strstr(grove_last_error(), "argument 'x0' (i32) was given a tree ('world' of type ") != NULL);
  grove_arg no_tree[1] = {grove_arg_tree(NULL)};
  CHECK_FAILS(grove_module_launch(m, "count", no_tree, 1), GROVE_ERROR_INVALID_ARGUMENT, "NULL tree");
  CHECK_FAILS(grove_module_sync(NULL), GROVE_ERROR_INVALID_ARGUMENT, "the module is NULL");
  static int32_t small[16];
  CHECK_FAILS(grove_tree_copy_out(world, "alive", GROVE_I32, small, 16), GROVE_ERROR_INVALID_ARGUMENT,
              "room for 16");
  CHECK_FAILS(grove_tree_copy_in(world, "alive", GROVE_I32, small, 16), GROVE_ERROR_INVALID_ARGUMENT,
              "got 16 values, the field holds");
  const int32_t too_big = 300;
  CHECK_FAILS(grove_tree_fill(world, "view", GROVE_I32, &too_big), GROVE_ERROR_INVALID_ARGUMENT,
              "Tree::fill of field 'view' (u8) was given");

  /* deactivate_all empties the grid. */
  CHECK(grove_tree_deactivate_all(world) == GROVE_OK);
  memset(model, 0, sizeof model);
  CHECK(same_cells(world, model));
  CHECK(strcmp(grove_last_error(), "") == 0);

  /* A whole grid copied in (its blocks activated by the module's filler). */
  for (int k = 0; k < N * N; ++k) model[k] = (k * 7919) % 13 == 0;
  CHECK(grove_tree_copy_in(world, "alive", GROVE_I32, model, N * N) == GROVE_OK);
  CHECK(same_cells(world, model));

  /* Released handles are refused by every call, a second release included,
   * instead of being used. */
  grove_tree* other = NULL;
  CHECK(grove_module_instantiate(m, "life", "other", &other) == GROVE_OK);
  grove_tree_release(other);
  CHECK_FAILS(grove_tree_num_elements(other, "alive", &elements), GROVE_ERROR_INVALID_ARGUMENT,
              "the tree was released already");
  grove_arg released_tree[1] = {grove_arg_tree(other)};
  CHECK_FAILS(grove_module_launch(m, "count", released_tree, 1), GROVE_ERROR_INVALID_ARGUMENT,
              "argument 0 is a tree that was released already");
  grove_tree_release(other);
  CHECK(strstr(grove_last_error(), "grove_tree_release: the tree was released already") != NULL);
  CHECK(grove_module_launch(m, "count", tree_only, 1) == GROVE_OK); /* the module goes on */
  CHECK(grove_module_sync(m) == GROVE_OK);

  grove_tree_release(world);
  grove_module_release(m);
  CHECK_FAILS(grove_module_sync(m), GROVE_ERROR_INVALID_ARGUMENT, "the module was released already");
  CHECK_FAILS(grove_module_kernel_count(m, &kernels), GROVE_ERROR_INVALID_ARGUMENT, "the module was released already");
  grove_module_release(m);
  CHECK(strstr(grove_last_error(), "grove_module_release: the module was released already") != NULL);
  grove_tree_release(world);
  CHECK(strstr(grove_last_error(), "grove_tree_release: the tree was released already") != NULL);
  grove_module_release(NULL);
  grove_tree_release(NULL);
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("grove_runtime C API: all checks passed\n");
  return 0;
}
