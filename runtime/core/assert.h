// runtime/core/assert.h — internal invariants (never a user's mistake: those are grove::Error).
#pragma once

#include <stdexcept>
#include <string>

namespace grove {

// A broken internal invariant: a bug in Grove, not in the user's program.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& m) : std::logic_error(m) {}
};

[[noreturn]] void internal_fail(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace grove

#define GROVE_ASSERT(cond, msg)                                      \
  do {                                                               \
    if (!(cond)) ::grove::internal_fail(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
