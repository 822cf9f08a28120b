/* grove/grove_runtime.h: the C API of grove_runtime. AOT modules (saved by
 * grove::aot::Module or `grove aot`) loaded and run from plain C, with no
 * compiler inside: open a module on a Vulkan device (Grove's, or the
 * application's) or, for a CUDA module, an NVIDIA GPU; instantiate its tree types, launch its kernels, read and
 * write fields by name.
 *
 *   grove_module* m;
 *   if (grove_module_load("life.grove", NULL, &m) != GROVE_OK) {
 *     fprintf(stderr, "%s\n", grove_last_error());
 *     ...
 *   }
 *   grove_tree* world;
 *   grove_module_instantiate(m, "life", "world", &world);
 *   grove_arg args[] = {grove_arg_tree(world), grove_arg_i32(8), grove_arg_i32(8), grove_arg_u32(1)};
 *   grove_module_launch(m, "seed", args, 4);
 *   int32_t v;
 *   int64_t index[2] = {10, 12};
 *   grove_tree_read(world, "alive", index, 2, GROVE_I32, &v);
 *
 * Every function returns a grove_result; on failure, grove_last_error()
 * (per thread) says what went wrong, naming the module, kernel, tree type or
 * field, and nothing the module held is lost: it stays usable. No C++
 * exception crosses this boundary. Handles are opaque; each is released
 * once, in any order (a tree keeps its module's device alive until both
 * are released). A released handle is refused by every call
 * (GROVE_ERROR_INVALID_ARGUMENT; a second release sets the message and
 * does nothing). A module and its trees may be used from several threads:
 * calls on one module take turns. */
#ifndef GROVE_GROVE_RUNTIME_H
#define GROVE_GROVE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum grove_result {
  GROVE_OK = 0,
  GROVE_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad type code, wrong kernel arguments, an index out of range */
  GROVE_ERROR_NOT_FOUND = 2,        /* no kernel, tree type or field of that name */
  GROVE_ERROR_IO = 3,               /* the module file cannot be read */
  GROVE_ERROR_FORMAT = 4,           /* not a module, truncated, corrupt, or of another format version */
  GROVE_ERROR_DEVICE = 5,           /* no device of the module's backend, or one that lacks a feature the module needs */
  GROVE_ERROR_KERNEL = 6,           /* a launch failed: a full pool, a failed assertion */
  GROVE_ERROR_INTERNAL = 7          /* a bug in Grove: please report it with the message */
} grove_result;

/* Scalar types of arguments and of values read or written (a field's
 * values are converted, as C++'s Tree::read and write do). */
typedef enum grove_type {
  GROVE_I8 = 1, GROVE_I16, GROVE_I32, GROVE_I64,
  GROVE_U8, GROVE_U16, GROVE_U32, GROVE_U64,
  GROVE_F32, GROVE_F64
} grove_type;

typedef struct grove_module grove_module;
typedef struct grove_tree grove_tree;

/* The message of the last failure on this thread ("" if none). Valid until
 * the next call of this API on the thread. */
const char* grove_last_error(void);
/* "GROVE_ERROR_FORMAT", ... */
const char* grove_result_name(grove_result result);

/* Where a module runs. Zero-initialise, then set what you need; NULL
 * options mean all defaults. */
typedef struct grove_options {
  const char* vulkan_device; /* NULL or "": GROVE_VULKAN_DEVICE, else the best; an index or part of a name */
  int validation;            /* nonzero: VK_LAYER_KHRONOS_validation */
  int debug;                 /* nonzero: every launch waits, errors name their launch */
  /* The application's own Vulkan objects (all NULL: Grove opens a device).
   * Features: what the application enabled on its VkDevice. */
  void* instance;        /* VkInstance */
  void* physical_device; /* VkPhysicalDevice */
  void* device;          /* VkDevice */
  void* queue;           /* VkQueue of queue_family (compute) */
  uint32_t queue_family;
  void* get_instance_proc_addr; /* PFN_vkGetInstanceProcAddr; NULL: the loader's */
  uint32_t api_version;
  int shader_int64, shader_float64, shader_int16, storage_buffer_16bit, atomic_int64;
  const char* cuda_device; /* CUDA modules: NULL or "": GROVE_CUDA_DEVICE, else 0; an index or part of a name */
  int profile;             /* nonzero: time every task (GROVE_PROFILE=1 too); see grove_module_profile_report */
} grove_options;

/* Opens a module file (or `size` bytes of one, `source` naming them in errors). */
grove_result grove_module_load(const char* path, const grove_options* options, grove_module** out);
grove_result grove_module_load_bytes(const void* bytes, size_t size, const char* source, const grove_options* options,
                                     grove_module** out);
/* Frees the module after waiting for its work (NULL is ignored). */
void grove_module_release(grove_module* module);

/* The user's kernels and the tree types, by position (0 .. count-1); the
 * names stay valid while the module lives. */
grove_result grove_module_kernel_count(const grove_module* module, size_t* count);
grove_result grove_module_kernel_name(const grove_module* module, size_t i, const char** name);
grove_result grove_module_tree_type_count(const grove_module* module, size_t* count);
grove_result grove_module_tree_type_name(const grove_module* module, size_t i, const char** name);

/* A zeroed instance of tree type `type`; `name` (or NULL) labels it in errors. */
grove_result grove_module_instantiate(grove_module* module, const char* type, const char* name, grove_tree** out);
/* The one instance of a Program's own tree (tree type "root", "root1", ...:
 * the fields a Program declared with prog.field and prog.root()), made at
 * load; GROVE_ERROR_INVALID_ARGUMENT for a tree type made to be instantiated. */
grove_result grove_module_tree(grove_module* module, const char* type, grove_tree** out);
/* Frees the handle (the tree's memory goes with its module). NULL is ignored. */
void grove_tree_release(grove_tree* tree);

/* A kernel argument: a number of `type`, or a tree (type 0). */
typedef struct grove_arg {
  int type; /* a grove_type, or 0 for a tree */
  union {
    int64_t i;
    uint64_t u;
    double f;
    const grove_tree* tree;
  } value;
} grove_arg;
grove_arg grove_arg_i32(int32_t v);
grove_arg grove_arg_i64(int64_t v);
grove_arg grove_arg_u32(uint32_t v);
grove_arg grove_arg_u64(uint64_t v);
grove_arg grove_arg_f32(float v);
grove_arg grove_arg_f64(double v);
grove_arg grove_arg_tree(const grove_tree* tree);

/* Launches `kernel` with its number arguments and its tree arguments, each
 * group in the order declared (they may be interleaved). Queued: errors of
 * the work itself come from grove_module_sync or a read. */
grove_result grove_module_launch(grove_module* module, const char* kernel, const grove_arg* args, size_t count);
/* Waits for every launch; GROVE_ERROR_KERNEL if one failed. */
grove_result grove_module_sync(grove_module* module);
/* Of a module loaded with grove_options::profile: waits for every launch,
 * then sets *report to a table of each kernel's tasks' device time (count,
 * total, mean, min, max in ms), valid until the next call of this function
 * on the module or its release. GROVE_ERROR_INVALID_ARGUMENT when the module
 * is not profiled. */
grove_result grove_module_profile_report(grove_module* module, const char** report);

/* Element `index` (count indices, as declared, offsets included) of `field`,
 * converted to `as` and stored at `out` (0 where a sparse cell is inactive). */
grove_result grove_tree_read(const grove_tree* tree, const char* field, const int64_t* index, size_t count,
                             grove_type as, void* out);
/* Writes one element (a sparse cell is activated), `value` being of type `as`. */
grove_result grove_tree_write(const grove_tree* tree, const char* field, const int64_t* index, size_t count,
                              grove_type as, const void* value);
/* The number of elements of `field`, and all of them, row-major, as `as`,
 * into `out` (room for `capacity` values). */
grove_result grove_tree_num_elements(const grove_tree* tree, const char* field, int64_t* count);
grove_result grove_tree_copy_out(const grove_tree* tree, const char* field, grove_type as, void* out,
                                 int64_t capacity);
/* Every element of `field` from `values` (`count` of them, of type `as`,
 * row-major; exactly the field's number of elements), each checked to keep
 * its value in the field's type before any is stored; a sparse field's
 * inactive cells are activated. grove_tree_fill sets every element to one
 * value. */
grove_result grove_tree_copy_in(const grove_tree* tree, const char* field, grove_type as, const void* values,
                                int64_t count);
grove_result grove_tree_fill(const grove_tree* tree, const char* field, grove_type as, const void* value);
/* Deactivates every sparse cell of the tree. */
grove_result grove_tree_deactivate_all(const grove_tree* tree);

#ifdef __cplusplus
}
#endif

#endif /* GROVE_GROVE_RUNTIME_H */
