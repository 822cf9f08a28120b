// tests/fuzz/module_fuzzer.cpp — libFuzzer target for the AOT module loader
// (runtime/aot/module.h), what grove_runtime runs on every module file it
// opens. Checksums are sealed first (seal_checksums), so that mutations
// reach the checks on the contents behind them. A grove::Error is the
// expected answer to a bad module; a module that is accepted must describe
// itself, write back to bytes that read to the same module, and let its
// layouts be walked (field paths, element lookups on a zeroed buffer).
// Anything else (a crash, a hang, a sanitizer report, another exception) is
// a bug.
//
// Built by `make fuzz` with clang (-fsanitize=fuzzer,address,undefined);
// its seed corpus is written by make_module_corpus.cpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "grove/error.h"
#include "runtime/aot/module.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grove;
  std::vector<uint8_t> bytes(data, data + size);
  rt::aot::seal_checksums(bytes);
  rt::aot::ModuleData m;
  try {
    m = rt::aot::read_module(bytes, "fuzz.grove");
  } catch (const Error&) {
    return 0;  // refused with a message: fine
  }
  (void)rt::aot::describe(m);
  const std::vector<uint8_t> again = rt::aot::write_module(m);
  const std::vector<uint8_t> twice = rt::aot::write_module(rt::aot::read_module(again, "rewritten.grove"));
  if (again != twice) {
    std::fprintf(stderr, "an accepted module does not write back to the same bytes\n");
    std::abort();
  }
  for (const rt::aot::ModuleTreeType& t : m.tree_types) {
    const rt::WordReader zero = [](int64_t) { return 0u; };
    for (const rt::FieldLayout& f : t.layout.fields) {
      try {
        (void)t.layout.field_path(f.id);
      } catch (const Error&) {  // more indices than a shader lookup takes
      }
      std::array<int64_t, rt::kMaxAxes> index{};
      const int64_t a = t.layout.find_element(f.id, index.data(), zero);
      if (a >= t.layout.total_words) {
        std::fprintf(stderr, "field '%s': element 0 at word %lld of %lld\n", f.name.c_str(),
                     static_cast<long long>(a), static_cast<long long>(t.layout.total_words));
        std::abort();
      }
    }
  }
  return 0;
}
