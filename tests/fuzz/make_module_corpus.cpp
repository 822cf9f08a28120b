// tests/fuzz/make_module_corpus.cpp — the module fuzzer's seed corpus: AOT
// modules with tree types of every SNode kind, laid out by the compiler
// (ir::SNodeForest), and kernel plans that name their nodes. The fuzz build
// has no Vulkan, so the plans' code is a few stand-in words: the loader
// checks structure, not SPIR-V (the device's driver does that). Variant 3
// is a CUDA module, whose kernel carries a stand-in PTX text and target.
// Then the crafted numbers the loader must refuse (issue 36): an argument
// word count and a scratch size whose byte counts wrap, and a list task
// over no SNode; each is written with sound
// checksums, so that the fuzzer starts from the checks behind them.
//
//   make_module_corpus DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/snode.h"
#include "runtime/aot/module.h"

namespace {

using namespace grove;

rt::aot::ModuleData module(int variant) {
  ir::SNodeForest f;
  const int tree = f.add_tree();
  const int root = f.tree(tree).root;
  const int blocks = f.add_child(root, rt::SNodeType::pointer, {0, 1}, {4, 4});
  const int cells = f.add_child(blocks, rt::SNodeType::dense, {0, 1}, {4, 4});
  f.add_place(cells, 0, DataType::i32, "x");
  const int mask = f.add_child(root, rt::SNodeType::bitmasked, {0, 1}, {8, 8});
  f.add_place(mask, 1, DataType::f32, "m", variant == 1 ? std::vector<int64_t>{-4, 2} : std::vector<int64_t>{});
  const int rows = f.add_child(root, rt::SNodeType::dense, {0}, {4});
  const int lists = f.add_child(rows, rt::SNodeType::dynamic, {1}, {16}, 4);
  f.add_place(lists, 2, variant == 2 ? DataType::i64 : DataType::i32, "d");
  f.lay_out(tree, int64_t{1} << 16);

  rt::aot::ModuleData m;
  m.grove_version = "corpus";
  const bool cuda = variant == 3;
  m.backend = cuda ? "cuda" : "vulkan";
  m.tree_types.push_back({1, "world", f.layout(tree)});
  rt::KernelPlan k;
  k.name = "step";
  k.args.push_back({"count", DataType::i32, 0, 1});
  k.arg_words = 1;
  rt::TreeSlotPlan slot;
  slot.kind = rt::TreeSlotPlan::Kind::tree;
  slot.tree_type = 1;
  slot.param = 0;
  k.slots.push_back(slot);
  rt::TaskPlan t;
  t.entry_point = "step_0";
  if (cuda) {
    const std::string ptx = ".version 7.8\n.target sm_75\n.address_size 64\n.visible .entry step_0()\n{\n\tret;\n}\n";
    k.code = rt::PtxCode{.ptx = ptx, .target = std::string(rt::aot::kCudaTargetPrefix) + "75"};
  } else {
    k.code = rt::SpirvCode{.modules = {{0x07230203u, 0x00010300u, 0u, 1u, 0u}}};
  }
  t.slots = {0};
  t.local_size = cuda ? 256 : 64;
  k.tasks.push_back(t);
  m.kernels.push_back(k);
  m.features = rt::aot::features_of(m.kernels);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_module_corpus DIR\n");
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  constexpr int kVariants = 4;
  for (int v = 0; v < kVariants; ++v) {
    const std::vector<uint8_t> bytes = rt::aot::write_module(module(v));
    rt::aot::read_module(bytes, "seed");  // a seed the loader accepts
    std::ofstream out(std::filesystem::path(argv[1]) / ("seed_" + std::to_string(v) + ".grove"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  // Crafted numbers, refused by the loader.
  const std::vector<void (*)(rt::KernelPlan&)> crafted = {
      [](rt::KernelPlan& k) { k.arg_words = 0x40000001u; },
      [](rt::KernelPlan& k) { k.scratch_words = (int64_t{1} << 62) + 1; },
      [](rt::KernelPlan& k) {
        k.tasks.front().kind = rt::TaskKind::listgen;
        k.tasks.front().parallel = true;
        k.tasks.front().snode = -1;
      },
  };
  for (size_t c = 0; c < crafted.size(); ++c) {
    rt::aot::ModuleData m = module(0);
    crafted[c](m.kernels.front());
    const std::vector<uint8_t> bytes = rt::aot::write_module(m);
    try {
      rt::aot::read_module(bytes, "crafted");
      std::fprintf(stderr, "make_module_corpus: crafted module %zu was accepted\n", c);
      return 1;
    } catch (const rt::aot::FormatError&) {
    }
    std::ofstream out(std::filesystem::path(argv[1]) / ("crafted_" + std::to_string(c) + ".grove"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  std::printf("make_module_corpus: %d modules and %zu crafted ones in %s\n", kVariants, crafted.size(), argv[1]);
  return 0;
}
