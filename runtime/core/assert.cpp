// runtime/core/assert.cpp — the failure path of GROVE_ASSERT.
#include "runtime/core/assert.h"

#include <sstream>

namespace grove {

void internal_fail(const char* file, int line, const char* cond, const std::string& msg) {
  std::ostringstream os;
  os << "grove internal error at " << file << ":" << line << ": " << msg << " (" << cond
     << " failed); please report this with the kernel that triggered it";
  throw InternalError(os.str());
}

}  // namespace grove
