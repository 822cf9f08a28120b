// tests/ir/pass_test_util.h — text-in/text-out helpers shared by the pass tests.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "ir/assert.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace grove::ir::test {

// The text of a raw string literal without the newline that follows `R"(`,
// so that expected kernels can start on a line of their own.
inline std::string text(std::string_view s) {
  if (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return std::string(s);
}

// How often `what` occurs in `text`.
inline size_t count(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Parses `module` (field declarations and exactly one kernel), runs `pass` on
// the kernel and returns the kernel as print_kernel prints it. The verifier
// checks the input and the pass's output, as it does between passes.
inline std::string run_pass(std::string_view module, const std::function<void(Kernel&)>& pass) {
  ParsedModule m = parse_module(text(module), "test");
  EXPECT_EQ(m.kernels.size(), 1u) << "a pass test module holds one kernel";
  if (m.kernels.empty()) return {};
  verify(*m.kernels.front(), "parse_module");
  pass(*m.kernels.front());
  verify(*m.kernels.front(), "the pass under test");
  return print_kernel(*m.kernels.front());
}

// For passes that report whether they changed anything: the printed kernel,
// and the report stored in *changed.
inline std::string run_pass(std::string_view module, bool (*pass)(Kernel&), bool* changed) {
  return run_pass(module, [&](Kernel& k) { *changed = pass(k); });
}

// The verifier's message for `k` after a pass called "my_pass", or "(valid)".
inline std::string verify_error(const Kernel& k) {
  try {
    verify(k, "my_pass");
  } catch (const grove::InternalError& e) {
    return e.what();
  }
  return "(valid)";
}

// Parses a one-kernel module (text() of it) and verifies it.
inline std::string verify_text(std::string_view module) {
  ParsedModule m = parse_module(text(module), "test.ir");
  return verify_error(*m.kernels.at(0));
}

}  // namespace grove::ir::test
