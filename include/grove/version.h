// grove/version.h — the library's version.
#pragma once

namespace grove {
inline constexpr const char* kVersion = "0.1.0";
}
