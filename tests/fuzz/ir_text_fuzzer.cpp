// tests/fuzz/ir_text_fuzzer.cpp — libFuzzer target for the IR's textual form:
// any bytes go to the parser; what parses goes to the verifier; what
// verifies must print and parse back to the same text. A syntax error
// (grove::Error) or a verifier failure (InternalError) is the expected
// answer to a bad module; anything else (a crash, a sanitizer report,
// another exception, a round trip that changes the text) is a bug.
//
// Built by `make fuzz` with clang (-fsanitize=fuzzer,address,undefined);
// its seed corpus is every module written in the IR tests (make_corpus.cpp).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace grove;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ir::ParsedModule module;
  try {
    module = ir::parse_module(text, "fuzz.ir");
  } catch (const Error&) {
    return 0;  // rejected with a message: fine
  }
  std::vector<const ir::Kernel*> kernels;
  for (const auto& k : module.kernels) {
    try {
      ir::verify(*k, "parse_module");
    } catch (const InternalError&) {
      return 0;  // parsed, but not valid IR: the verifier says why
    }
    kernels.push_back(k.get());
  }
  const std::string printed = ir::print_module(kernels);
  std::string reprinted;
  try {
    ir::ParsedModule again = ir::parse_module(printed, "reprinted.ir");
    std::vector<const ir::Kernel*> again_kernels;
    for (const auto& k : again.kernels) again_kernels.push_back(k.get());
    reprinted = ir::print_module(again_kernels);
  } catch (const Error& e) {
    std::fprintf(stderr, "the printed form of a valid module does not parse: %s\n%s\n", e.what(), printed.c_str());
    std::abort();
  }
  if (reprinted != printed) {
    std::fprintf(stderr, "print(parse(print(m))) != print(m):\n%s\n---\n%s\n", printed.c_str(), reprinted.c_str());
    std::abort();
  }
  return 0;
}
