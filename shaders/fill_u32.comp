// fill_u32.comp — sets words[first_word .. first_word + word_count) of a
// storage buffer to `value`. Grid-stride loop: any group count works.
#version 450

layout(local_size_x = 64) in;

layout(set = 0, binding = 0, std430) buffer Words {
  uint words[];
};

layout(push_constant, std430) uniform Params {
  uint first_word;
  uint word_count;
  uint value;
} params;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < params.word_count; i += stride) {
    words[params.first_word + i] = params.value;
  }
}
