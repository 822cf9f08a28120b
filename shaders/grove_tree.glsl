// grove_tree.glsl: reading a Grove tree from an application's own shaders
// (a fragment shader drawing a sparse field, say), following the memory
// contract of docs/memory.md without Grove's compiler.
//
// The application binds the tree's buffer (grove::runtime::Tree::
// vulkan_buffer(), 32-bit words) and the path words of the fields it reads
// (Tree::field(name).path, uploaded into any buffer it likes, several
// fields one after another), and defines, before including this file, how
// one word of each is read:
//
//   layout(std430, set = 0, binding = 0) readonly buffer GroveTree { uint tree_words[]; };
//   layout(std430, set = 0, binding = 1) readonly buffer GrovePaths { uint path_words[]; };
//   #define GROVE_TREE_WORD(i) tree_words[i]
//   #define GROVE_PATH_WORD(i) path_words[i]
//   #extension GL_GOOGLE_include_directive : require  (glslang; shaderc adds it)
//   #include "grove_tree.glsl"
//
//   uint w = grove_find_element(alive_path, ivec4(i, j, 0, 0));
//   int alive = w == GROVE_INACTIVE ? 0 : int(GROVE_TREE_WORD(w));
//
// An element is one word (two for 64-bit types, low word first); narrower
// types sit in the word's low bits (grove_u8(), grove_i16() below), f16 as
// its 16 bits (unpackHalf2x16(w).x). Indices are those the field was
// declared with, offsets included; at most 4.
//
// Reading is safe while no Grove kernel writes the tree: put the
// application's pass after Module::record_barrier() (or its own barrier
// from COMPUTE_SHADER / SHADER_WRITE). Path words change only when the
// module does, so they can be uploaded once.
#ifndef GROVE_TREE_GLSL
#define GROVE_TREE_GLSL

#if !defined(GROVE_TREE_WORD) || !defined(GROVE_PATH_WORD)
#error "define GROVE_TREE_WORD(i) and GROVE_PATH_WORD(i) before including grove_tree.glsl"
#endif

// What grove_find_element() returns for an element that is not stored: an
// index outside the field, or an inactive cell of a sparse node on its path.
const uint GROVE_INACTIVE = 0xFFFFFFFFu;

// Node kinds in path words (runtime/core/tree_layout.h, FieldPathWord).
const uint GROVE_DENSE = 1u;
const uint GROVE_BITMASKED = 2u;
const uint GROVE_POINTER = 3u;
const uint GROVE_DYNAMIC = 4u;

// The word in the tree's buffer of element `index` of the field whose path
// words start at word `path` of GROVE_PATH_WORD, or GROVE_INACTIVE.
uint grove_find_element(uint path, ivec4 index) {
  uint levels = GROVE_PATH_WORD(path + 0u);
  uint indices = GROVE_PATH_WORD(path + 1u);
  uvec4 local = uvec4(0u);
  for (uint d = 0u; d < indices; ++d) {
    int i = index[d] - int(GROVE_PATH_WORD(path + 12u + d));
    if (i < 0 || uint(i) >= GROVE_PATH_WORD(path + 8u + d)) return GROVE_INACTIVE;
    local[d] = uint(i);
  }
  uint addr = GROVE_PATH_WORD(path + 2u);  // the root cell
  for (uint l = 0u; l < levels; ++l) {
    uint q = path + 16u + 16u * l;
    // This node's cell within its container: row-major over its indices.
    uint c = 0u;
    for (uint d = 0u; d < indices; ++d) {
      uint extent = GROVE_PATH_WORD(q + 12u + d);
      c = c * extent + (local[d] / GROVE_PATH_WORD(q + 8u + d)) % extent;
    }
    uint kind = GROVE_PATH_WORD(q);
    uint container = addr + GROVE_PATH_WORD(q + 1u);
    uint cell_words = GROVE_PATH_WORD(q + 2u);
    if (kind == GROVE_DENSE) {
      addr = container + c * cell_words;
    } else if (kind == GROVE_BITMASKED) {
      if (((GROVE_TREE_WORD(container + c / 32u) >> (c % 32u)) & 1u) == 0u) return GROVE_INACTIVE;
      addr = container + GROVE_PATH_WORD(q + 3u) + c * cell_words;
    } else if (kind == GROVE_POINTER) {
      // A slot holds its pool entry plus one; 0 is an inactive cell.
      uint slot = GROVE_TREE_WORD(container + c);
      if (slot == 0u) return GROVE_INACTIVE;
      addr = GROVE_PATH_WORD(q + 4u) + (slot - 1u) * GROVE_PATH_WORD(q + 5u);
    } else {
      // dynamic: the length, then one slot per chunk of cells.
      uint length = min(GROVE_TREE_WORD(container), GROVE_PATH_WORD(q + 7u));
      if (c >= length) return GROVE_INACTIVE;
      uint chunk = GROVE_PATH_WORD(q + 6u);
      uint slot = GROVE_TREE_WORD(container + 1u + c / chunk);
      if (slot == 0u) return GROVE_INACTIVE;
      addr = GROVE_PATH_WORD(q + 4u) + (slot - 1u) * GROVE_PATH_WORD(q + 5u) + (c % chunk) * cell_words;
    }
  }
  return addr + GROVE_PATH_WORD(path + 3u);  // the place in its cell
}

// True when the element is stored (its sparse cells are active).
bool grove_is_active(uint path, ivec4 index) { return grove_find_element(path, index) != GROVE_INACTIVE; }

// An element's value, 0 where it is not stored.
uint grove_u32(uint path, ivec4 index) {
  uint w = grove_find_element(path, index);
  return w == GROVE_INACTIVE ? 0u : GROVE_TREE_WORD(w);
}
int grove_i32(uint path, ivec4 index) { return int(grove_u32(path, index)); }
float grove_f32(uint path, ivec4 index) { return uintBitsToFloat(grove_u32(path, index)); }
uint grove_u8(uint path, ivec4 index) { return grove_u32(path, index) & 0xFFu; }
int grove_i8(uint path, ivec4 index) { return bitfieldExtract(grove_i32(path, index), 0, 8); }
uint grove_u16(uint path, ivec4 index) { return grove_u32(path, index) & 0xFFFFu; }
int grove_i16(uint path, ivec4 index) { return bitfieldExtract(grove_i32(path, index), 0, 16); }

#endif  // GROVE_TREE_GLSL
