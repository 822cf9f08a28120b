// bench_store_one.comp — words[0] = 1: the trivial dispatch of the launch
// overhead benchmark.
//   binding 0: words (u32[1])
// Dispatch one group.
#version 450

layout(local_size_x = 1) in;

layout(set = 0, binding = 0, std430) buffer Words {
  uint words[];
};

void main() { words[0] = 1u; }
