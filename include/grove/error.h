// grove/error.h — the one exception type users see.
#pragma once

#include <stdexcept>
#include <string>

namespace grove {

// A user's mistake or a condition the user must act on (bad kernel, bad tree,
// index out of bounds in debug mode, pool exhausted, missing backend...).
// The message names the kernel, field, SNode or file and says what to change.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A launch that failed on the device, reported when its work is waited for
// (a sync, a read): a pool or list that filled up, a failed assertion in
// debug mode. Everything stored before stays intact.
class KernelError : public Error {
 public:
  using Error::Error;
};

}  // namespace grove
