// tests/vdb/pnanovdb_probe.comp — an application's shader that reads a
// NanoVDB float grid through PNanoVDB, as renderers do: for each coordinate,
// whether the voxel is active and its value. Nothing of Grove in it: the
// grid's bytes came from grove::vdb::to_nanovdb.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer NanoGrid { uint pnanovdb_buf_data[]; };
layout(std430, binding = 1) readonly buffer Coords { ivec4 coords[]; };
layout(std430, binding = 2) writeonly buffer Out { vec2 result[]; };  // (value, active)
layout(push_constant) uniform Push { uint count; };

#extension GL_GOOGLE_include_directive : require
#define PNANOVDB_GLSL
#include "nanovdb/PNanoVDB.h"

void main() {
  const uint n = gl_GlobalInvocationID.x;
  if (n >= count) return;
  pnanovdb_buf_t buf;
  buf.unused = 0u;
  pnanovdb_grid_handle_t grid;
  grid.address.byte_offset = 0u;
  pnanovdb_root_handle_t root = pnanovdb_tree_get_root(buf, pnanovdb_grid_get_tree(buf, grid));
  pnanovdb_readaccessor_t acc;
  pnanovdb_readaccessor_init(acc, root);
  const ivec3 ijk = coords[n].xyz;
  const pnanovdb_address_t at = pnanovdb_readaccessor_get_value_address(PNANOVDB_GRID_TYPE_FLOAT, buf, acc, ijk);
  const bool on = pnanovdb_readaccessor_is_active(PNANOVDB_GRID_TYPE_FLOAT, buf, acc, ijk);
  result[n] = vec2(pnanovdb_read_float(buf, at), on ? 1.0 : 0.0);
}
