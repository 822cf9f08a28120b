// options.cpp — command-line parsing shared by the examples.
#include "options.h"

#include <charconv>
#include <cstdio>
#include <string>

namespace grove_examples {
namespace {

void print_usage(std::FILE* to, const ExampleInfo& info) {
  std::fprintf(
      to,
      "usage: %.*s [--arch auto|interp|cpu|vulkan|cuda] [--out DIR] [--size N] [--profile]\n"
      "       [--window | --no-window] [--screenshot FILE]\n"
      "\n"
      "%.*s\n"
      "\n"
      "  --arch A   backend to run on (default auto: the best one available)\n"
      "  --out DIR  directory for the output files (default out; created if missing)\n"
      "  --size N   %.*s (default %d, at most %d)\n",
      static_cast<int>(info.name.size()), info.name.data(), static_cast<int>(info.summary.size()),
      info.summary.data(), static_cast<int>(info.size_help.size()), info.size_help.data(),
      info.default_size, info.max_size);
  if (info.default_steps > 0)
    std::fprintf(to, "  --steps N  steps to simulate (default %d)\n", info.default_steps);
  std::fprintf(
      to,
      "  --profile  print the device time of every kernel's tasks at the end (GROVE_PROFILE=1)\n");
  std::fprintf(
      to,
      "  --window   show the frames in a window (a Vulkan swapchain); an error if none opens\n"
      "             (default: a window when there is a display, PNG always)\n"
      "  --no-window  PNG only, even where there is a display\n"
      "  --screenshot FILE  at the end, write what the window shows as a PNG (implies --window)\n");
  std::fprintf(to, "  --help     this message\n");
}

int usage_error(const ExampleInfo& info, const std::string& message) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(info.name.size()), info.name.data(),
               message.c_str());
  std::fprintf(stderr, "run '%.*s --help' for the options\n", static_cast<int>(info.name.size()),
               info.name.data());
  return 2;
}

}  // namespace

std::optional<int> parse_options(int argc, char** argv, const ExampleInfo& info, Options* out) {
  out->size = info.default_size;
  out->steps = info.default_steps;
  for (int a = 1; a < argc; ++a) {
    std::string_view opt = argv[a];
    if (opt == "--help" || opt == "-h") {
      print_usage(stdout, info);
      return 0;
    }
    if (opt == "--profile") {
      out->profile = true;
      continue;
    }
    if (opt == "--window" || opt == "--no-window") {
      out->window = opt == "--window" ? WindowMode::on : WindowMode::off;
      continue;
    }
    // Both "--name value" and "--name=value".
    std::string_view value;
    bool has_value = false;
    if (const size_t eq = opt.find('='); opt.starts_with("--") && eq != std::string_view::npos) {
      value = opt.substr(eq + 1);
      opt = opt.substr(0, eq);
      has_value = true;
    }
    if (opt != "--arch" && opt != "--out" && opt != "--size" && opt != "--screenshot" &&
        !(opt == "--steps" && info.default_steps > 0)) {
      return usage_error(info, "unknown option '" + std::string(argv[a]) + "'");
    }
    if (!has_value) {
      if (a + 1 >= argc) return usage_error(info, std::string(opt) + " needs a value");
      value = argv[++a];
    }

    if (opt == "--arch") {
      if (!grove::parse_arch(value, &out->arch)) {
        return usage_error(info, "unknown backend '" + std::string(value) +
                                     "' (expected auto, interp, cpu, vulkan or cuda)");
      }
    } else if (opt == "--out") {
      if (value.empty()) return usage_error(info, "--out needs a directory");
      out->out_dir = std::filesystem::path(value);
    } else if (opt == "--screenshot") {
      if (value.empty()) return usage_error(info, "--screenshot needs a file name");
      out->screenshot = std::filesystem::path(value);
    } else if (opt == "--steps") {
      int n = 0;
      const char* end = value.data() + value.size();
      const auto [ptr, ec] = std::from_chars(value.data(), end, n);
      if (ec != std::errc() || ptr != end || n < 1 || n > 100000)
        return usage_error(info, "--steps must be a whole number from 1 to 100000, not '" +
                                     std::string(value) + "'");
      out->steps = n;
    } else {
      int n = 0;
      const char* end = value.data() + value.size();
      const auto [ptr, ec] = std::from_chars(value.data(), end, n);
      if (ec != std::errc() || ptr != end || n < 1 || n > info.max_size) {
        return usage_error(info, "--size must be a whole number from 1 to " +
                                     std::to_string(info.max_size) + ", not '" +
                                     std::string(value) + "'");
      }
      out->size = n;
    }
  }
  if (!out->screenshot.empty() && out->window == WindowMode::off)
    return usage_error(info, "--screenshot reads the window, and --no-window asks for none");
  return std::nullopt;
}

void make_out_dir(const std::filesystem::path& dir) { std::filesystem::create_directories(dir); }

}  // namespace grove_examples
