// grove — the command-line tool: version, backends compiled in, devices
// found, and PTX from kernels' lowered IR.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <grove/grove.h>

#include "grove/aot.h"
#include "life.h"
#include "runtime/aot/module.h"

#ifdef GROVE_WITH_CUDA
#include "cuda/ptx.h"
#include "ir/parser.h"
#include "program/backend.h"
#endif

#ifdef GROVE_WITH_VDB
#include "grove/vdb.h"
#endif

#ifdef GROVE_WITH_VULKAN
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/target.h"
#endif

namespace {


void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: grove <command>\n"
               "\n"
               "commands:\n"
               "  info      version, backends compiled in, and the devices found\n"
               "  ptx       PTX for kernels in lowered IR: grove ptx <file.ir | dump dir>... [--sm 90] [-o DIR]\n"
               "            (a dump dir is what GROVE_DUMP_DIR=DIR made while a program ran: the last\n"
               "            stage of each kernel is taken)\n"
               "  aot       an AOT module of an example: grove aot sparse_life [-o life.grove] [--size N]\n"
               "            [--arch vulkan [--target T] | cuda [--sm 75]] (Vulkan: compiled on a Vulkan\n"
               "            device, lavapipe will do, or with no device for a target such as desktop or\n"
               "            lavapipe, as `grove info` prints them; CUDA: PTX, made without a GPU)\n"
               "  inspect   what an AOT module file holds: grove inspect <file.grove>\n"
               "  vdb       OpenVDB files: grove vdb info <file.vdb>; grove vdb import <file.vdb> [--grid G]\n"
               "            [--arch A] [--block B] (into a Program: what Grove holds of it); grove vdb export\n"
               "            <file.vdb> <out.vdb | out.nvdb> [--grid G] [--arch A] (imported, then written\n"
               "            back from Grove: OpenVDB, or NanoVDB for .nvdb)\n"
               "  version   the version only\n"
               "  help      this message (also: grove --help)\n");
}

#ifdef GROVE_WITH_VDB
std::string bounds(const grove::vdb::GridInfo& g) {
  if (g.active_voxels == 0) return "empty";
  char buf[160];
  std::snprintf(buf, sizeof buf, "[%lld, %lld, %lld] .. [%lld, %lld, %lld]", static_cast<long long>(g.min[0]),
                static_cast<long long>(g.min[1]), static_cast<long long>(g.min[2]), static_cast<long long>(g.max[0]),
                static_cast<long long>(g.max[1]), static_cast<long long>(g.max[2]));
  return buf;
}

// grove vdb info|import|export: OpenVDB files, and the round trip through Grove.
int cmd_vdb(int argc, char** argv) {
  const std::string usage =
      "grove vdb info <file.vdb> | import <file.vdb> [--grid G] [--arch A] [--block B] | "
      "export <file.vdb> <out.vdb|out.nvdb> [--grid G] [--arch A]";
  if (argc < 4) throw grove::Error("grove vdb needs a subcommand and a file: " + usage);
  const std::string sub = argv[2], in = argv[3];
  if (sub == "info") {
    if (argc != 4) throw grove::Error("grove vdb info takes one file: " + usage);
    for (const grove::vdb::GridInfo& g : grove::vdb::info(in))
      std::printf("grid '%s': %s, %s, %lld active voxels, voxel size %g, bounds %s\n", g.name.c_str(),
                  g.value_type.c_str(), g.grid_class.c_str(), static_cast<long long>(g.active_voxels), g.voxel_size,
                  bounds(g).c_str());
    return 0;
  }
  if (sub != "import" && sub != "export") throw grove::Error("grove vdb: unknown subcommand '" + sub + "': " + usage);
  int a = 4;
  std::string out;
  if (sub == "export") {
    if (argc < 5) throw grove::Error("grove vdb export needs the file to write: " + usage);
    out = argv[a++];
  }
  grove::vdb::ImportOptions options;
  grove::Config config;
  for (; a < argc; ++a) {
    const std::string opt = argv[a];
    if (a + 1 >= argc) throw grove::Error("grove vdb: " + opt + " needs a value");
    const std::string value = argv[++a];
    if (opt == "--grid") {
      options.grid = value;
    } else if (opt == "--arch") {
      if (!grove::parse_arch(value, &config.arch)) throw grove::Error("grove vdb: unknown backend '" + value + "'");
    } else if (opt == "--block" && sub == "import") {
      options.block = std::atoi(value.c_str());
    } else {
      throw grove::Error("grove vdb " + sub + ": unknown option '" + opt + "': " + usage);
    }
  }
  grove::Program prog(config);
  const grove::vdb::Imported grid = grove::vdb::import_grid(prog, in, options);
  const grove::Stats stats = prog.stats();
  const grove::SNodeStats& blocks = stats.at(grid.blocks->name());
  const grove::SNodeStats& voxels = stats.at(grid.voxels->name());
  std::printf("grid '%s' (%s, %s) on %s: %lld active voxels in %lld blocks of %lld^3 (pointer %s, bitmasked %s), "
              "bounds %s\n",
              grid.info.name.c_str(), grid.info.value_type.c_str(), grid.info.grid_class.c_str(),
              prog.device_name().c_str(), static_cast<long long>(voxels.active_cells),
              static_cast<long long>(blocks.active_cells), static_cast<long long>(options.block),
              grid.blocks->name().c_str(), grid.voxels->name().c_str(), bounds(grid.info).c_str());
  if (sub == "export") {
    grove::vdb::ExportOptions eo;
    eo.name = grid.info.name;
    eo.voxel_size = grid.info.voxel_size;
    eo.grid_class = grid.info.grid_class == "unknown" ? "" : grid.info.grid_class;
    eo.background = grid.info.background;
    grove::vdb::export_grid(prog, grid.field, out, eo);
    std::printf("wrote %s\n", out.c_str());
  }
  return 0;
}
#endif

bool compiled_in(grove::Arch arch) {
  for (grove::Arch a : grove::compiled_backends()) {
    if (a == arch) return true;
  }
  return false;
}

#ifdef GROVE_WITH_VULKAN
// Every Vulkan device the loader reports, what Grove may use on it, and
// which one a Program picks by default (GROVE_VULKAN_DEVICE or the best).
void list_vulkan_devices() {
  std::vector<grove::vk::DeviceInfo> devices;
  try {
    devices = grove::vk::enumerate_devices();
  } catch (const grove::Error& e) {
    std::printf("vulkan devices: none (%s)\n", e.what());
    return;
  }
  int picked = -1;
  try {
    picked = static_cast<int>(grove::vk::Device::create()->info().index);
  } catch (const grove::Error&) {
  }
  std::printf("vulkan devices:%s\n", devices.empty() ? " none (the loader found no driver)" : "");
  for (const grove::vk::DeviceInfo& d : devices) {
    std::string features;
    auto add = [&](bool on, const char* name) {
      if (on) features += std::string(features.empty() ? "" : " ") + name;
    };
    add(d.shader_int64, "int64");
    add(d.shader_float64, "float64");
    add(d.atomic_int64, "atomic-int64");
    add(d.atomic_float32_add, "atomic-f32-add");
    std::printf("  %u: %s (%s, Vulkan %s)%s\n", d.index, d.name.c_str(), grove::vk::to_string(d.type),
                grove::vk::version_string(d.api_version).c_str(),
                static_cast<int>(d.index) == picked ? "  <- used by default" : "");
    if (!d.unsupported_reason.empty()) {
      std::printf("     unusable: %s\n", d.unsupported_reason.c_str());
      continue;
    }
    std::printf("     %s; largest buffer %llu MiB\n", features.empty() ? "32-bit only" : features.c_str(),
                static_cast<unsigned long long>(d.max_storage_buffer_range >> 20));
    std::printf("     target: %s\n", grove::vk::describe(grove::vk::target_of(d)).c_str());
  }
}
#endif

// `grove aot <example>`: the example's tree type and kernels in a module,
// for Vulkan (compiled on a Vulkan device; lavapipe will do) or CUDA
// (compiled with no GPU, for --sm).
int cmd_aot(int argc, char** argv) {
  if (argc < 3) throw grove::Error("grove aot: name an example (sparse_life)");
  const std::string example = argv[2];
  std::string out = example == "sparse_life" ? "life.grove" : example + ".grove";
  int size = 16384;
  grove::Arch arch = grove::Arch::Vulkan;
  int sm = 0;
  std::string target;  // Config::vulkan_target
  auto number = [](const std::string& option, const std::string& v) {
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n <= 0 || n > (1 << 30))
      throw grove::Error("grove aot: " + option + " takes a positive number, got '" + v + "'");
    return static_cast<int>(n);
  };
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "-o" || a == "--size" || a == "--arch" || a == "--sm" || a == "--target") && i + 1 >= argc)
      throw grove::Error("grove aot: " + a + " needs a value");
    if (a == "-o") {
      out = argv[++i];
    } else if (a == "--size") {
      const std::string v = argv[++i];
      size = number(a, v);
      if (size < sparse_life::kBlock || size % sparse_life::kBlock != 0)
        throw grove::Error("grove aot: --size takes a multiple of " + std::to_string(sparse_life::kBlock) + ", got '" + v + "'");
    } else if (a == "--arch") {
      const std::string v = argv[++i];
      std::string names;
      bool made = false;
      const bool parsed = grove::parse_arch(v, &arch);
      for (const grove::aot::Target& t : grove::aot::targets()) {
        names += (names.empty() ? "" : " or ") + std::string(grove::arch_name(t.arch));
        made |= parsed && arch == t.arch;
      }
      if (!made) throw grove::Error("grove aot: --arch takes " + names + " in this build, got '" + v + "'");
    } else if (a == "--sm") {
      sm = number(a, argv[++i]);
    } else if (a == "--target") {
      target = argv[++i];
    } else {
      throw grove::Error("grove aot: unknown option '" + a + "' (grove help)");
    }
  }
  if (sm != 0 && arch != grove::Arch::Cuda) throw grove::Error("grove aot: --sm is for --arch cuda");
  if (!target.empty() && arch != grove::Arch::Vulkan) throw grove::Error("grove aot: --target is for --arch vulkan");
  if (example != "sparse_life") throw grove::Error("grove aot: no example named '" + example + "' (there is: sparse_life)");
  // Vulkan without --target is compiled on a Vulkan device; any other
  // module (CUDA's PTX, Vulkan's SPIR-V for a --target) needs no device and
  // is made from a Program on the interpreter, which only holds the trees
  // while the kernels are compiled.
  grove::Config config;
  const bool on_it = arch == grove::Arch::Vulkan && target.empty();
  config.arch = on_it ? arch : grove::Arch::Interp;
  config.cuda_sm = sm;
  config.vulkan_target = target;
  grove::Program prog(config);
  sparse_life::Life life(prog, size);
  grove::aot::Module m(prog, arch);
  m.add_tree_type("life", life.type);
  for (const grove::Kernel& k : {life.seed, life.count, life.update, life.prune, life.snapshot}) m.add_kernel(k.name(), k);
  m.save(out);
  const std::string made = on_it              ? "compiled on " + prog.device_name()
                           : !target.empty() ? "SPIR-V for the Vulkan target '" + target + "'"
                                             : "PTX for sm_" + std::to_string(sm != 0 ? sm : 75) + " and newer GPUs";
  std::printf("grove aot: wrote %s (sparse_life, %d x %d cells, %s)\n", out.c_str(), size, size, made.c_str());
  return 0;
}

int cmd_info() {
  std::printf("grove %s\n", grove::kVersion);

  std::string built;
  for (grove::Arch a : grove::compiled_backends()) {
    if (!built.empty()) built += ", ";
    built += grove::arch_name(a);
  }
  std::printf("backends compiled in: %s\n", built.empty() ? "(none)" : built.c_str());

  // A backend shows as found only if a Program can actually be made on it.
  std::printf("devices:\n");
  int found = 0;
  for (grove::Arch a : grove::known_backends()) {
    const std::string name(grove::arch_name(a));
    if (!compiled_in(a)) {
      std::printf("  %-7s not built\n", (name + ":").c_str());
      continue;
    }
    try {
      grove::Program prog({.arch = a});
      std::printf("  %-7s %s\n", (name + ":").c_str(), prog.device_name().c_str());
      ++found;
    } catch (const grove::Error& e) {
      std::printf("  %-7s unavailable: %s\n", (name + ":").c_str(), e.what());
    }
  }
#ifdef GROVE_WITH_VULKAN
  list_vulkan_devices();
#endif
  std::printf("auto order: %s\n", std::string(grove::auto_order()).c_str());
  try {
    grove::Program prog;
    std::printf("auto:     %s (%s)\n", std::string(grove::arch_name(prog.arch())).c_str(), prog.device_name().c_str());
  } catch (const grove::Error& e) {
    std::printf("auto:     unavailable: %s\n", e.what());
  }
  if (found == 0) {
    std::fprintf(stderr, "grove: no backend could be started\n");
    return 1;
  }
  return 0;
}

#ifdef GROVE_WITH_CUDA
namespace fs = std::filesystem;

// The IR files `arg` names: the file itself, or in a GROVE_DUMP_DIR
// directory the last stage of each kernel ("<kernel>.NN_<stage>.ir" with
// the highest NN).
std::vector<fs::path> ir_files(const std::string& arg) {
  if (!fs::is_directory(arg)) {
    if (!fs::exists(arg)) throw grove::Error("grove ptx: '" + arg + "' does not exist");
    return {arg};
  }
  std::map<std::string, std::pair<std::string, fs::path>> last;  // kernel -> (NN, file)
  for (const fs::directory_entry& e : fs::directory_iterator(arg)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".ir") continue;
    const size_t dot = name.rfind('.', name.size() - 4);
    if (dot == std::string::npos || dot + 3 >= name.size()) continue;
    const std::string kernel = name.substr(0, dot), stage = name.substr(dot + 1, 2);
    auto& best = last[kernel];
    if (best.first.empty() || stage > best.first) best = {stage, e.path()};
  }
  if (last.empty())
    throw grove::Error("grove ptx: directory '" + arg + "' holds no kernel IR (<kernel>.NN_<stage>.ir); run a "
                       "program with GROVE_DUMP_DIR=" + arg + " first");
  std::vector<fs::path> out;
  for (const auto& [kernel, best] : last) out.push_back(best.second);
  return out;
}

int cmd_ptx(int argc, char** argv) {
  int sm = grove::cuda::kMaxSm;
  fs::path out_dir = ".";
  std::vector<std::string> inputs;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--sm" || a == "-o") && i + 1 >= argc) throw grove::Error("grove ptx: " + a + " needs a value");
    if (a == "--sm") {
      std::string v = argv[++i];
      if (v.rfind("sm_", 0) == 0) v = v.substr(3);
      char* end = nullptr;
      sm = static_cast<int>(std::strtol(v.c_str(), &end, 10));
      if (v.empty() || *end != '\0') throw grove::Error("grove ptx: --sm takes a number such as 90, got '" + v + "'");
    } else if (a == "-o") {
      out_dir = argv[++i];
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) throw grove::Error("grove ptx: give IR files or a GROVE_DUMP_DIR directory (grove help)");
  grove::cuda::PtxCompiler compiler(sm);
  fs::create_directories(out_dir);
  for (const std::string& input : inputs)
    for (const fs::path& file : ir_files(input)) {
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      grove::ir::ParsedModule m = grove::ir::parse_module(text.str(), file.string());
      for (const auto& kernel : m.kernels) {
        if (!grove::ir::is_lowered(kernel->stage))
          throw grove::Error("grove ptx: kernel '" + kernel->name() + "' in " + file.string() +
                             " is not lowered; give the last stage of its pipeline (the highest-numbered dump)");
        const grove::cuda::PtxCode code = compiler.compile(*kernel, /*debug=*/false);
        const fs::path path = out_dir / (grove::detail::dump_name(kernel->name()) + ".sm_" + std::to_string(sm) + ".ptx");
        std::ofstream(path) << code.ptx;
        std::printf("%s: %zu kernel entr%s\n", path.string().c_str(), code.tasks.size(),
                    code.tasks.size() == 1 ? "y" : "ies");
      }
    }
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stdout);
    return 0;
  }
  const std::string_view command = argv[1];
  try {
    if (command == "help" || command == "--help" || command == "-h") {
      print_usage(stdout);
      return 0;
    }
    if (command == "version" || command == "--version") {
      std::printf("grove %s\n", grove::kVersion);
      return 0;
    }
    if (command == "info") return cmd_info();
    if (command == "aot") return cmd_aot(argc, argv);
    if (command == "inspect") {
      if (argc != 3) throw grove::Error("grove inspect takes one AOT module file: grove inspect <file.grove>");
      const std::string path = argv[2];
      const grove::rt::aot::ModuleData m =
          grove::rt::aot::read_module(grove::rt::aot::read_file(path), "module '" + path + "'");
      std::printf("%s", grove::rt::aot::describe(m).c_str());
      return 0;
    }
    if (command == "vdb") {
#ifdef GROVE_WITH_VDB
      return cmd_vdb(argc, argv);
#else
      throw grove::Error("grove vdb: this Grove was built without OpenVDB (install Debian's libopenvdb-dev and "
                         "libnanovdb-dev, or run scripts/install-deps.sh, and configure again)");
#endif
    }
    if (command == "ptx") {
#ifdef GROVE_WITH_CUDA
      return cmd_ptx(argc, argv);
#else
      throw grove::Error("grove ptx: this Grove was built without the CUDA backend (GROVE_WITH_CUDA)");
#endif
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "grove: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
