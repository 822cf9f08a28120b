#version 450
#extension GL_GOOGLE_include_directive : require
// Draws the life module's tree straight from its buffer: the `alive` field
// (under a pointer SNode: a sparse path) on the left, the `map` field (dense)
// on the right. The colours are those of scene.h.
layout(std430, set = 0, binding = 0) readonly buffer GroveTree { uint tree_words[]; };
layout(std430, set = 0, binding = 1) readonly buffer GrovePaths { uint path_words[]; };
#define GROVE_TREE_WORD(i) tree_words[i]
#define GROVE_PATH_WORD(i) path_words[i]
#include "grove_tree.glsl"

layout(push_constant) uniform Frame {
  uint alive_path;  // where the fields' path words start in path_words
  uint map_path;
  int zoom;         // pixels per cell side in the left panel
  int panel;        // a panel's side in pixels
} frame;

layout(location = 0) out vec4 color;

vec4 rgba(float r, float g, float b) { return vec4(r, g, b, 255.0) / 255.0; }

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  if (p.x < frame.panel) {
    uint w = grove_find_element(frame.alive_path, ivec4(p.y / frame.zoom, p.x / frame.zoom, 0, 0));
    if (w == GROVE_INACTIVE) color = rgba(0.0, 0.0, 0.0);
    else if (tree_words[w] != 0u) color = rgba(255.0, 255.0, 255.0);
    else color = rgba(24.0, 40.0, 64.0);
  } else {
    uint mark = grove_u8(frame.map_path, ivec4(p.y, p.x - frame.panel, 0, 0));
    color = mark != 0u ? rgba(255.0, 160.0, 0.0) : rgba(16.0, 16.0, 16.0);
  }
}
