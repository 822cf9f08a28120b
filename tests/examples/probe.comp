#version 450
#extension GL_GOOGLE_include_directive : require
// Reads every element of a 2-index field through grove_tree.glsl: its value,
// or 0xFFFFFFFF where grove_find_element finds it inactive.
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer GroveTree { uint tree_words[]; };
layout(std430, set = 0, binding = 1) readonly buffer GrovePaths { uint path_words[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { uint out_words[]; };
#define GROVE_TREE_WORD(i) tree_words[i]
#define GROVE_PATH_WORD(i) path_words[i]
#include "grove_tree.glsl"

layout(push_constant) uniform Probe {
  uint path;    // the field's path words in path_words
  int lo0, lo1; // its first index on each axis
  int n0, n1;   // its extent on each axis
} probe;

void main() {
  int k = int(gl_GlobalInvocationID.x);
  if (k >= probe.n0 * probe.n1) return;
  ivec4 index = ivec4(probe.lo0 + k / probe.n1, probe.lo1 + k % probe.n1, 0, 0);
  uint w = grove_find_element(probe.path, index);
  out_words[k] = w == GROVE_INACTIVE ? 0xFFFFFFFFu : GROVE_TREE_WORD(w);
}
