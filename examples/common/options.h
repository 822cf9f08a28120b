// options.h — the command-line options every example takes:
// --arch auto|interp|cpu|vulkan|cuda, --out DIR, --size N, --steps N (some),
// --profile, --window / --no-window, --screenshot FILE, --help.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include <grove/program.h>

namespace grove_examples {

// What an example says about itself in --help.
struct ExampleInfo {
  std::string_view name;       // e.g. "julia"
  std::string_view summary;    // one line: what it computes and writes
  std::string_view size_help;  // what --size N means for this example
  int default_size = 256;
  int max_size = 8192;
  int default_steps = 0;  // > 0: the example takes --steps N (at most 100000)
};

// Whether frames go to a window (viewer.h): auto = when a display is there.
enum class WindowMode { automatic, on, off };

struct Options {
  grove::Arch arch = grove::Arch::Auto;
  std::filesystem::path out_dir = "out";
  int size = 0;
  int steps = 0;
  bool profile = false;  // print the device time of each kernel's tasks at the end
  WindowMode window = WindowMode::automatic;
  std::filesystem::path screenshot;  // non-empty: the window's last frame as a PNG (needs a window)
  grove::Config config() const { return {.arch = arch, .profile = profile}; }
};

// Parses argv into `out` (size starts at info.default_size). Returns the exit
// code when main should return at once: 0 after --help (usage printed on
// stdout), 2 after a usage error (reported on stderr). std::nullopt: run.
std::optional<int> parse_options(int argc, char** argv, const ExampleInfo& info, Options* out);

// Creates `dir` and its parents when missing. Throws std::filesystem_error.
void make_out_dir(const std::filesystem::path& dir);

}  // namespace grove_examples
