// grove/host_copy.h — where a whole-field copy out puts its values
// (Field::to_vector, runtime::Tree::to_vector). Internal to those
// templates: applications call to_vector.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

namespace grove::detail {

// `place(target, values, count)` returns the memory holding `count` host
// values for the copy to write. `values`, when not null, are those values
// already laid out as the host wants them (a dense field of the host's own
// type, read in place): `place` takes them in one copy, and the copy
// writes nothing more (a std::vector made from the range is not zeroed
// first).
//
// `append`, where not null, takes the values in order instead, `count` at
// a time (zeros when `values` is null), `total` in all: a copy that reads
// every value from the tree (a sparse field whose words are the host's
// values) appends run after run, and a std::vector grows by each with
// nothing zeroed first.
//
// `room`, where not null, returns the memory of `count` values the target
// holds already (a std::vector kept from the last copy, of that size), in
// which a copy may write run by run with nothing zeroed first, or null
// where it holds none: then a copy appends.
struct HostDestination {
  void* target = nullptr;
  void* (*place)(void* target, const void* values, std::size_t count) = nullptr;
  void (*append)(void* target, const void* values, std::size_t count, std::size_t total) = nullptr;
  void* (*room)(void* target, std::size_t count) = nullptr;
};

template <typename T>
HostDestination vector_destination(std::vector<T>& out) {
  return {&out,
          [](void* target, const void* values, std::size_t count) -> void* {
            auto& o = *static_cast<std::vector<T>*>(target);
            if (values != nullptr) {
              const T* first = static_cast<const T*>(values);
              o.assign(first, first + count);
            } else {
              o.resize(count);
            }
            return o.data();
          },
          [](void* target, const void* values, std::size_t count, std::size_t total) {
            auto& o = *static_cast<std::vector<T>*>(target);
            if (o.capacity() < total) o.reserve(total);
            if (values != nullptr) {
              const T* first = static_cast<const T*>(values);
              o.insert(o.end(), first, first + count);
            } else {
              o.resize(o.size() + count);
            }
          },
          [](void* target, std::size_t count) -> void* {
            auto& o = *static_cast<std::vector<T>*>(target);
            return o.size() == count ? o.data() : nullptr;
          }};
}

// Memory the caller holds, room for the copy's values of `value_bytes` each.
struct Memory {
  void* out = nullptr;
  std::size_t value_bytes = 0;
};
inline HostDestination memory_destination(Memory& memory) {
  return {&memory, [](void* target, const void* values, std::size_t count) -> void* {
            const auto* m = static_cast<const Memory*>(target);
            if (values != nullptr && count != 0) std::memcpy(m->out, values, count * m->value_bytes);
            return m->out;
          }};
}

}  // namespace grove::detail
