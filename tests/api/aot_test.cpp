// AOT modules: saved from a Program (grove/aot.h), loaded by the runtime
// alone (grove/runtime.h), run, and compared bit for bit with the same
// launches through the Program; bad module files refused with errors that
// say what is wrong. The expected values of the simulation come from the
// Program run (the JIT path), which the other suites check against plain
// C++ models.
//
// Each test that makes and runs a module does so for every module backend:
// Vulkan (the Program on Vulkan, validated) and CUDA (the Program on the
// interpreter: CUDA modules are made with no GPU). A CUDA module is made
// and read back everywhere; it runs where there is a CUDA driver and GPU,
// and elsewhere the test skips there, saying why. What is only Vulkan's
// (device features, the file format's checks on a Vulkan module) is in
// AotVulkan; tests/cuda has what is only CUDA's.
#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../support/scratch_dir.h"
#include "backend_fixture.h"
#include "grove/aot.h"
#include "grove/runtime.h"
#include "runtime/aot/module.h"

using namespace grove;
using grove::testing::error_of;
using ::testing::HasSubstr;

namespace {

// Parameterised over the module's backend.
class Aot : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    if (GetParam() == Arch::Vulkan && !grove::testing::vulkan_unavailable_reason().empty())
      GTEST_SKIP() << "no Vulkan: " << grove::testing::vulkan_unavailable_reason();
  }
  // The Program that saves the module and runs the same launches.
  Config program() const {
    Config c;
    c.arch = GetParam() == Arch::Vulkan ? Arch::Vulkan : Arch::Interp;
    c.vulkan_validation = GetParam() == Arch::Vulkan;
    return c;
  }
  runtime::Options options() const {
    runtime::Options o;
    o.validation = GetParam() == Arch::Vulkan;
    return o;
  }
  // Why the module cannot run here ("" when it can).
  std::string unavailable() const {
    return GetParam() == Arch::Cuda ? grove::testing::cuda_unavailable_reason() : "";
  }
};

// Where modules run: skips the rest of the test, saying why, where they cannot.
#define SKIP_WHERE_MODULES_CANNOT_RUN() \
  if (!unavailable().empty()) GTEST_SKIP() << "the module was made; running it needs CUDA: " << unavailable()

class AotVulkan : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!grove::testing::vulkan_unavailable_reason().empty())
      GTEST_SKIP() << "no Vulkan: " << grove::testing::vulkan_unavailable_reason();
  }
  static Config vulkan() {
    Config c;
    c.arch = Arch::Vulkan;
    c.vulkan_validation = true;
    return c;
  }
};

// A sparse world in one tree type: a pointer grid of dense blocks, a
// bitmasked field, and per-row dynamic lists; kernels that activate,
// deactivate, append and visit every kind.
struct World {
  TreeType type;
  SNode *blocks = nullptr, *mask = nullptr, *lists = nullptr;
  Kernel seed, step, tally;

  explicit World(Program& prog) {
    type = prog.tree_type("world", [&](TreeTypeBuilder& t) {
      Field x = t.field(i32, "x"), m = t.field(f32, "m"), d = t.field(i32, "d"), n = t.field(i64, "n");
      blocks = &t.root().pointer(ij, 8);
      blocks->dense(ij, 4).place(x);
      mask = &t.root().bitmasked(ij, {32, 32});
      mask->place(m);
      lists = &t.root().dense(i, 4).dynamic(j, 64, 8);
      lists->place(d);
      t.root().dense(i, 4).place(n);
    });
    seed = prog.kernel("seed", {arg(type, "w"), arg(i32, "count"), arg(f32, "scale")}, [&](Args a) {
      TreeArg w = a.tree("w");
      Field x = w.field("x"), m = w.field("m");
      SNodeRef l = w[*lists];
      // count <= 32: distinct cells for distinct k.
      for_range(0, a["count"], [&](Expr k) {
        Expr i = k * 7 % 32, j = k * 13 % 32;
        x(i, j) = k + 1;
        m(j, i) = cast(f32, k) * a["scale"];
      });
      // Appends one after the other, so that each list's order is known.
      Var k(i32, 0);
      while_([&] { return k < a["count"]; }, [&] {
        append(l, {k % 4}, k);
        k += 1;
      });
    });
    step = prog.kernel("step", {arg(type, "w")}, [&](Args a) {
      TreeArg w = a.tree("w");
      Field x = w.field("x"), m = w.field("m"), d = w.field("d");
      SNodeRef b = w[*blocks], bm = w[*mask];
      // Each invocation touches only its own cell (or block): no races.
      for_each(b, [&](Expr p, Expr q) {
        if_(x(p * 4, q * 4) % 5 == 4, [&] { deactivate(b, {p, q}); });
      });
      for_each(x, [&](Expr i, Expr j) { x(i, j) = x(i, j) * 3 + i - j; });
      for_each(m, [&](Expr i, Expr j) {
        if_(m(i, j) > 4.0f, [&] { deactivate(bm, {i, j}); }).else_([&] { m(i, j) = m(i, j) + 0.75f; });
      });
      for_each(d, [&](Expr i, Expr j) { d(i, j) = d(i, j) * 2 + i; });
    });
    tally = prog.kernel("tally", {arg(type, "w")}, [&](Args a) {
      TreeArg w = a.tree("w");
      Field x = w.field("x"), n = w.field("n");
      SNodeRef l = w[*lists];
      for_range(0, 4, [&](Expr r) { n(r) = cast(i64, length(l, {r})); });
      for_each(x, [&](Expr i, Expr j) { n(i % 4) += cast(i64, x(i, j)) * 1000; });
    });
  }
};

// Every element of every field of a tree, as raw words.
template <typename Get>
std::vector<uint64_t> image(Get get) {
  std::vector<uint64_t> out;
  for (const char* f : {"x", "m", "d"}) {
    std::vector<uint32_t> v = get(f, uint32_t{});
    out.insert(out.end(), v.begin(), v.end());
  }
  std::vector<int64_t> n = get("n", int64_t{});
  out.insert(out.end(), n.begin(), n.end());
  return out;
}

std::vector<uint64_t> image_of(const Tree& t) {
  return image([&](const char* f, auto as) {
    using T = decltype(as);
    if (std::string(f) == "m") {  // the bits of the floats
      std::vector<float> v = t.field(f).to_vector<float>();
      std::vector<T> bits(v.size());
      std::memcpy(bits.data(), v.data(), v.size() * 4);
      return bits;
    }
    return t.field(f).to_vector<T>();
  });
}

std::vector<uint64_t> image_of(const runtime::Tree& t) {
  return image([&](const char* f, auto as) {
    using T = decltype(as);
    if (std::string(f) == "m") {
      std::vector<float> v = t.to_vector<float>(f);
      std::vector<T> bits(v.size());
      std::memcpy(bits.data(), v.data(), v.size() * 4);
      return bits;
    }
    return t.to_vector<T>(f);
  });
}

std::vector<uint8_t> world_module(Program& prog, World& w, Arch arch = Arch::Vulkan) {
  aot::Module m(prog, arch);
  m.add_tree_type("world", w.type);
  m.add_kernel("seed", w.seed);
  m.add_kernel("step", w.step);
  m.add_kernel("tally", w.tally);
  return m.bytes();
}

// What a module holds, read back from its bytes (no device needed).
TEST_P(Aot, AModuleReadsBackWithEveryKernelsCode) {
  Program prog(program());
  World w(prog);
  const rt::aot::ModuleData m = rt::aot::read_module(world_module(prog, w, GetParam()), "the world module");
  const std::string backend = GetParam() == Arch::Cuda ? "cuda" : "vulkan";
  EXPECT_EQ(m.backend, backend);
  ASSERT_EQ(m.tree_types.size(), 1u);
  EXPECT_EQ(m.tree_types[0].name, "world");
  std::vector<std::string> names;
  for (const rt::KernelPlan& k : m.kernels) {
    names.push_back(k.name);
    EXPECT_EQ(k.backend(), backend);
    if (GetParam() == Arch::Vulkan) {  // a SPIR-V module per task (deserialize_plan checked none is empty)
      EXPECT_EQ(k.spirv().modules.size(), k.tasks.size()) << k.name;
      continue;
    }
    for (const rt::TaskPlan& t : k.tasks) {
      // Each task is an entry of the kernel's PTX, made for sm_75 (Config::cuda_sm 0).
      const std::string& ptx = k.ptx().ptx;
      EXPECT_EQ(k.ptx().target, "nvptx64-nvidia-cuda, sm_75");
      EXPECT_NE(ptx.find(".target sm_75"), std::string::npos) << k.name;
      EXPECT_NE(ptx.find(".entry " + t.entry_point + "("), std::string::npos) << k.name << ": " << t.entry_point;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"seed", "step", "tally", "__write_world.x", "__fill_world.x",
                                             "__write_world.m", "__fill_world.m", "__write_world.d", "__fill_world.d",
                                             "__deactivate_all_world." + w.blocks->name(),
                                             "__deactivate_all_world." + w.mask->name(),
                                             "__deactivate_all_world." + w.lists->name()}));
}

TEST_P(Aot, ALoadedModuleRunsLikeTheProgramBitForBit) {
  Program prog(program());
  World w(prog);
  const std::vector<uint8_t> bytes = world_module(prog, w, GetParam());
  SKIP_WHERE_MODULES_CANNOT_RUN();
  runtime::Module mod = runtime::Module::load(bytes, "the world module", options());
  EXPECT_EQ(mod.kernels(), (std::vector<std::string>{"seed", "step", "tally"}));
  EXPECT_EQ(mod.tree_types(), (std::vector<std::string>{"world"}));

  Tree a = prog.instantiate(w.type, "a"), b = prog.instantiate(w.type, "b");
  runtime::Tree ra = mod.instantiate("world", "a"), rb = mod.instantiate("world");
  auto both = [&](auto&& on_program, auto&& on_module) {
    on_program();
    on_module();
    ASSERT_EQ(image_of(a), image_of(ra));
    ASSERT_EQ(image_of(b), image_of(rb));
  };
  both([&] { w.seed(a, 32, 0.25f); }, [&] { mod.launch("seed", {ra, 32, 0.25f}); });
  both([&] { w.seed(b, 9, 2.0f); }, [&] { mod.launch("seed", {rb, 9, 2.0f}); });
  for (int s = 0; s < 4; ++s) {
    both([&] { w.step(a); }, [&] { mod.launch("step", {ra}); });
    both([&] { w.tally(a); w.step(b); }, [&] { mod.launch("tally", {ra}); mod.launch("step", {rb}); });
  }
  // The comparisons above were of worlds with something in them.
  auto nonzero = [](const std::vector<uint64_t>& v) { return std::count_if(v.begin(), v.end(), [](uint64_t x) { return x != 0; }); };
  EXPECT_GT(nonzero(image_of(ra)), 100);
  EXPECT_GT(nonzero(image_of(rb)), 20);
  // Host writes (a sparse one activates through the module's writer kernel).
  both([&] { a.field("x").write({31, 0}, 77); a.field("n").write({2}, int64_t{-5}); },
       [&] { ra.write("x", {31, 0}, 77); ra.write("n", {2}, int64_t{-5}); });
  both([&] { w.tally(a); }, [&] { mod.launch("tally", {ra}); });
  // Statistics agree, SNode by SNode.
  const std::vector<runtime::SNodeStats> rs = ra.stats();
  ASSERT_EQ(rs.size(), a.stats().snodes.size());
  for (const runtime::SNodeStats& s : rs) {
    const SNodeStats p = a.stats().at(s.name);
    EXPECT_EQ(s.active_cells, p.active_cells) << s.name;
    EXPECT_EQ(s.pool_used, p.pool_used) << s.name;
    EXPECT_EQ(s.pool_capacity, p.pool_capacity) << s.name;
  }
  // deactivate_all empties one instance.
  both([&] { a.deactivate_all(); }, [&] { ra.deactivate_all(); });
  for (const runtime::SNodeStats& s : ra.stats())
    if (s.kind != "dense" && s.kind != "root") {
      EXPECT_EQ(s.active_cells, 0) << s.name;
    }
  EXPECT_EQ(ra.to_vector<int32_t>("x"), std::vector<int32_t>(32 * 32, 0));
  EXPECT_EQ(ra.to_vector<int32_t>("d"), std::vector<int32_t>(4 * 64, 0));
}

TEST_P(Aot, SavedFilesLoadAndAreReplacedWhole) {
  Program prog(program());
  World w(prog);
  aot::Module m(prog, GetParam());
  m.add_kernel("seed", w.seed);  // brings its tree type along
  const grove::testing::ScratchDir dir("grove_aot_saved");
  const std::string path = (dir / "aot_saved.grove").string();
  m.save(path);
  m.save(path);  // replaced whole
  const std::string description = rt::aot::describe(rt::aot::read_module(rt::aot::read_file(path), path));
  EXPECT_THAT(description, HasSubstr(GetParam() == Arch::Cuda ? "bytes of PTX for sm_75" : "bytes of SPIR-V"));
  SKIP_WHERE_MODULES_CANNOT_RUN();
  runtime::Module mod = runtime::Module::load(path, options());
  runtime::Tree t = mod.instantiate("world");
  mod.launch("seed", {t, 3, 1.0f});
  EXPECT_EQ(t.read<int32_t>("x", {7, 13}), 2);
  EXPECT_EQ(t.read<int32_t>("d", {1, 0}), 1);
  EXPECT_THAT(description, ::testing::AllOf(HasSubstr("tree types: 1"), HasSubstr("world"),
                                            HasSubstr("seed(tree 0: world, count: i32, scale: f32)"),
                                            HasSubstr("__write_world.x")));
}

TEST_P(Aot, MisuseNamesWhatIsWrong) {
  Program prog(program());
  World w(prog);
  aot::Module m(prog, GetParam());
  EXPECT_THAT(error_of([&] { m.add_kernel("__mine", w.seed); }), HasSubstr("Grove's own"));
  m.add_kernel("seed", w.seed);
  EXPECT_THAT(error_of([&] { m.add_kernel("seed", w.step); }), HasSubstr("added already"));
  EXPECT_THAT(error_of([] {
                Config c;
                c.arch = Arch::Interp;
                Program p(c);
                aot::Module bad(p, Arch::Vulkan);
              }),
              HasSubstr("needs Config::vulkan_target"));
  EXPECT_THAT(error_of([&] { aot::Module bad(prog, Arch::Cpu); }),
              HasSubstr("modules are made for Arch::Vulkan (SPIR-V) and Arch::Cuda (PTX), not Arch::cpu"));

  SKIP_WHERE_MODULES_CANNOT_RUN();
  runtime::Module mod = runtime::Module::load(m.bytes(), "mod", options());
  runtime::Tree t = mod.instantiate("world");
  EXPECT_THAT(error_of([&] { mod.instantiate("grid"); }), HasSubstr("no tree type 'grid' (it has: world)"));
  EXPECT_THAT(error_of([&] { mod.launch("step", {t}); }), HasSubstr("no kernel 'step' (it has: seed)"));
  EXPECT_THAT(error_of([&] { mod.launch("seed", {t, 3}); }), HasSubstr("takes 2 number argument(s) but was given 1"));
  EXPECT_THAT(error_of([&] { mod.launch("seed", {t, t, 3}); }),
              HasSubstr("argument 'count' (i32) was given a tree ('world#0' of type 'world'); it takes numbers (count: i32, scale: f32) and 1 tree(s)"));
  EXPECT_THAT(error_of([&] { mod.launch("seed", {3, 1.0f}); }), HasSubstr("but was given 0 tree(s)"));
  EXPECT_THAT(error_of([&] { mod.launch("seed", {t, 3.5e10, 1.0f}); }), HasSubstr("out of the range of i32"));
  EXPECT_THAT(error_of([&] { (void)t.read<int32_t>("y", {0, 0}); }), HasSubstr("no field 'y'"));
  EXPECT_THAT(error_of([&] { (void)t.read<int32_t>("x", {0, 32}); }), HasSubstr("outside [0, 32)"));
  EXPECT_THAT(error_of([&] { (void)t.read<int32_t>("x", {0}); }), HasSubstr("takes 2 indices"));
  EXPECT_THAT(error_of([&] { mod.tree("world"); }), HasSubstr("make instances with Module::instantiate(\"world\")"));
  EXPECT_THAT(error_of([&] { t.deactivate_all("S99pointer"); }), HasSubstr("no SNode 'S99pointer' (it has: "));
  // Still usable after every refusal.
  mod.launch("seed", {t, 1, 1.0f});
  EXPECT_EQ(t.read<int32_t>("x", {0, 0}), 1);
}

// Kernels on the Program's own fields (prog.field, prog.root()): their tree
// travels as tree type "root", whose one instance the runtime makes at
// load; host writes activate its sparse cells, and deactivate_all works on
// it whole or one SNode at a time. Values by hand.
TEST_P(Aot, TheProgramsOwnFieldsTravelAsTreeTypeRoot) {
  Program prog(program());
  Field x = prog.field(i32, "x");
  Field total = prog.field(i32, "total", {});
  SNode& blocks = prog.root().pointer(i, 8);
  blocks.dense(i, 4).place(x);
  Kernel fill = prog.kernel("fill", {arg(i32, "n")}, [&](Args a) {
    for_range(0, a["n"], [&](Expr k) { x(k * 3) = k + 1; });
  });
  Kernel sum = prog.kernel("sum", [&] { for_each(x, [&](Expr k) { atomic_add(total(), x(k)); }); });
  aot::Module m(prog, GetParam());
  m.add_kernel("fill", fill);
  m.add_kernel("sum", sum);
  const std::vector<uint8_t> bytes = m.bytes();
  EXPECT_THAT(rt::aot::describe(rt::aot::read_module(bytes, "mod")),
              ::testing::AllOf(HasSubstr("root (type "), HasSubstr("the Program's own tree: one instance, made at load"),
                               HasSubstr("fill(n: i32)"), HasSubstr("__write_root.x"),
                               HasSubstr("__deactivate_all_root." + blocks.name())));

  SKIP_WHERE_MODULES_CANNOT_RUN();
  runtime::Module mod = runtime::Module::load(bytes, "mod", options());
  runtime::Tree root = mod.tree("root");
  EXPECT_EQ(root.name(), "root");
  EXPECT_THAT(error_of([&] { mod.instantiate("root"); }), HasSubstr("use Module::tree(\"root\")"));
  mod.launch("fill", {4});  // x[0, 3, 6, 9] = 1..4: blocks 0, 0, 1, 2
  mod.launch("sum", {});
  EXPECT_EQ(root.read<int32_t>("total", {}), 1 + 2 + 3 + 4);
  EXPECT_EQ(root.read<int32_t>("x", {9}), 4);
  auto active = [&] {
    for (const runtime::SNodeStats& s : root.stats())
      if (s.name == blocks.name()) return s.active_cells;
    return int64_t{-1};
  };
  EXPECT_EQ(active(), 3);
  root.write("x", {31}, 7);  // activates block 7
  EXPECT_EQ(active(), 4);
  root.deactivate_all(blocks.name());
  EXPECT_EQ(active(), 0);
  EXPECT_EQ(root.read<int32_t>("x", {9}), 0);
  root.write("x", {5}, 2);
  root.deactivate_all();
  EXPECT_EQ(active(), 0);
  EXPECT_EQ(root.read<int32_t>("total", {}), 10);  // dense: untouched
  // A whole-field copy in activates every block (the filler takes no tree
  // argument here either); a fill of the 0-D field stores its one value.
  std::vector<int32_t> xs(32);
  for (int k = 0; k < 32; ++k) xs[static_cast<size_t>(k)] = 100 - k;
  root.from_vector("x", xs);
  EXPECT_EQ(active(), 8);
  EXPECT_EQ(root.to_vector<int32_t>("x"), xs);
  root.fill("total", int32_t{-3});
  EXPECT_EQ(root.read<int32_t>("total", {}), -3);
}

// A module saved where 64-bit integers exist, loaded where they do not: the
// load names the kernel and the feature, and the same bytes load on the
// full device.
TEST_F(AotVulkan, AModuleNeedingWhatTheDeviceLacksIsRefusedNamingIt) {
  Program prog(vulkan());
  World w(prog);
  const std::vector<uint8_t> bytes = world_module(prog, w);
  const rt::aot::ModuleData data = rt::aot::read_module(bytes, "world module");
  std::string needs_int64;
  for (const rt::KernelPlan& k : data.kernels)
    if (k.features.shader_int64 && needs_int64.empty()) needs_int64 = k.name;
  ASSERT_FALSE(needs_int64.empty()) << "the world module's kernels should use 64-bit integers (field 'n')";
  runtime::Options small;
  small.without_int64 = true;
  const std::string e = error_of([&] { runtime::Module::load(bytes, "world module", small); });
  EXPECT_THAT(e, HasSubstr("kernel '" + needs_int64 + "' needs shaderInt64"));
  EXPECT_THAT(e, HasSubstr("lacks"));
  runtime::Module full = runtime::Module::load(bytes, "world module");
  runtime::Tree t = full.instantiate("world");
  full.launch("seed", {t, 2, 1.0f});
  EXPECT_EQ(t.read<int32_t>("x", {7, 13}), 2);
}

// ---- bad module files ----------------------------------------------------------------------

TEST_F(AotVulkan, TruncatedCorruptAndForeignFilesAreRefused) {
  Program prog(vulkan());
  World w(prog);
  const std::vector<uint8_t> good = world_module(prog, w);
  auto refused = [](std::span<const uint8_t> bytes) { return error_of([&] { rt::aot::read_module(bytes, "f"); }); };
  // Cut at every section boundary, and just before and after each.
  const std::vector<rt::aot::SectionSpan> sections = rt::aot::module_sections(good, "f");
  ASSERT_EQ(sections.size(), 3u);
  for (const rt::aot::SectionSpan& s : sections) {
    for (size_t cut : {s.begin, s.begin + 1, s.begin + 15, s.begin + 16, (s.begin + s.end) / 2, s.end - 1}) {
      EXPECT_THAT(refused(std::span(good).first(cut)), HasSubstr("truncated")) << "cut at " << cut << " in " << s.name;
    }
  }
  std::vector<uint8_t> bytes = good;
  bytes[4] = static_cast<uint8_t>(rt::aot::kModuleVersion + 1);  // the format version
  EXPECT_THAT(refused(bytes), HasSubstr("module format version " + std::to_string(rt::aot::kModuleVersion + 1) +
                                        "; this Grove reads version " + std::to_string(rt::aot::kModuleVersion)));
  bytes = good;
  bytes[0] ^= 1;
  EXPECT_THAT(refused(bytes), HasSubstr("not a Grove AOT module"));
  bytes = good;
  bytes.push_back(0);
  EXPECT_THAT(refused(bytes), HasSubstr("bytes after the last section"));
  bytes = good;
  bytes[sections[2].end - 3] ^= 0x40;
  EXPECT_THAT(refused(bytes), HasSubstr("section 'kernels': its checksum does not match"));
  // Thousands of random byte flips: each is refused (the checksums), and
  // none crashes or hangs (this runs under AddressSanitizer in make sanitize).
  std::mt19937 rng(2024);
  for (int n = 0; n < 3000; ++n) {
    bytes = good;
    const size_t at = rng() % bytes.size();
    bytes[at] ^= static_cast<uint8_t>(1 + rng() % 255);
    EXPECT_FALSE(refused(bytes).empty()) << "a flip at byte " << at << " was accepted";
  }
}

// Flips inside a section whose checksum is then made to match: the
// contents' own checks must catch them or yield a module that holds
// together; nothing may crash.
TEST_F(AotVulkan, CorruptContentsWithMatchingChecksumsNeverCrashTheReader) {
  Program prog(vulkan());
  World w(prog);
  const std::vector<uint8_t> good = world_module(prog, w);
  const std::vector<rt::aot::SectionSpan> sections = rt::aot::module_sections(good, "f");
  std::mt19937 rng(99);
  int refused = 0;
  for (int n = 0; n < 3000; ++n) {
    std::vector<uint8_t> bytes = good;
    const rt::aot::SectionSpan& s = sections[static_cast<size_t>(n % 2 + 1)];  // tree types, kernels
    const size_t payload = s.begin + 16;
    const size_t at = payload + rng() % (s.end - payload);
    bytes[at] ^= static_cast<uint8_t>(1 + rng() % 255);
    rt::aot::seal_checksums(bytes);
    try {
      rt::aot::ModuleData m = rt::aot::read_module(bytes, "f");
      for (const rt::aot::ModuleTreeType& t : m.tree_types) EXPECT_LE(t.layout.root_offset, t.layout.total_words);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 600);  // many flips land in sizes, ids and offsets, which are checked (SPIR-V words are not)
}

// A module whose numbers are absurd (its checksums sealed, as a crafted
// file's would be) is refused when it is read, before anything is
// allocated or launched, naming the kernel and what is wrong.
TEST_P(Aot, CraftedNumbersAreRefusedWhenTheModuleIsRead) {
  Program prog(program());
  World w(prog);
  const std::vector<uint8_t> good = world_module(prog, w, GetParam());
  const rt::aot::ModuleData data = rt::aot::read_module(good, "good");
  // Changes kernel "step" (which has list tasks) of the module.
  auto refusal = [&](const std::function<void(rt::KernelPlan&)>& change) {
    rt::aot::ModuleData crafted = data;
    for (rt::KernelPlan& k : crafted.kernels)
      if (k.name == "step") change(k);
    try {
      rt::aot::read_module(rt::aot::write_module(crafted), "crafted");
      return std::string("(accepted)");
    } catch (const rt::aot::FormatError& e) {
      return std::string(e.what());
    }
  };
  // 0x40000001 * 4 wraps to 4 in 32 bits.
  EXPECT_THAT(refusal([](rt::KernelPlan& k) { k.arg_words = 0x40000001u; }),
              AllOf(HasSubstr("section 'kernels', kernel 1: arguments: 1073741825 argument words; a kernel takes at "
                              "most")));
  // (2^62 + 1) * 4 wraps to 4 in 64 bits.
  EXPECT_THAT(refusal([](rt::KernelPlan& k) { k.scratch_words = (int64_t{1} << 62) + 1; }),
              HasSubstr("4611686018427387905 scratch words; a buffer holds 0 to 2^32 words"));
  // List tasks over no SNode, or over the scratch buffer.
  auto list_task = [](rt::KernelPlan& k) -> rt::TaskPlan& {
    for (rt::TaskPlan& t : k.tasks)
      if (t.kind == rt::TaskKind::listgen) return t;
    throw Error("no listgen task");
  };
  EXPECT_THAT(refusal([&](rt::KernelPlan& k) {
                rt::TaskPlan& t = list_task(k);
                t.snode = -1;
                t.tree_slot = -1;
              }),
              HasSubstr("a listgen task with SNode -1 and tree slot -1"));
  EXPECT_THAT(refusal([&](rt::KernelPlan& k) {
                k.slots.push_back({rt::TreeSlotPlan::Kind::scratch, -1, -1});
                list_task(k).tree_slot = static_cast<int>(k.slots.size()) - 1;
              }),
              HasSubstr("which is not a tree's"));
  EXPECT_EQ(refusal([](rt::KernelPlan&) {}), "(accepted)");  // the same module, rewritten, reads back
}

// What the runtime refuses at launch: Grove's own kernels by name, and
// more trees than a kernel takes.
TEST_P(Aot, LaunchesRefuseOwnKernelsAndExtraTrees) {
  SKIP_WHERE_MODULES_CANNOT_RUN();
  Program prog(program());
  World w(prog);
  const std::vector<uint8_t> bytes = world_module(prog, w, GetParam());
  std::string own;
  for (const rt::KernelPlan& k : rt::aot::read_module(bytes, "m").kernels)
    if (k.name.rfind("__write_", 0) == 0) own = k.name;
  ASSERT_FALSE(own.empty()) << "the module holds Grove's host-write kernels";
  runtime::Module mod = runtime::Module::load(bytes, "mod", options());
  runtime::Tree t = mod.instantiate("world"), u = mod.instantiate("world");
  EXPECT_THAT(error_of([&] { mod.launch(own, {t, int64_t{1000000}, int64_t{0}, int32_t{7}}); }),
              AllOf(HasSubstr("'" + own + "' is one of Grove's own kernels"), HasSubstr("Module::kernels()")));
  EXPECT_THAT(error_of([&] { mod.launch("tally", {t, u}); }),
              HasSubstr("kernel 'tally' of mod takes 1 tree argument(s) but was given 2"));
  mod.launch("seed", {t, 5, 1.0f});
  mod.launch("tally", {t});
  // Row 0's list holds k = 0 and 4; x is 1 at (0, 0) and 5 at (28, 20), both in row 0 (i % 4).
  EXPECT_EQ(t.read<int64_t>("n", {0}), 2 + 1000 * (1 + 5));
}

// A host copy of a field larger than the machine's memory is an error
// naming the field, not std::bad_alloc.
TEST_P(Aot, ACopyOfAFieldLargerThanMemoryIsRefused) {
  SKIP_WHERE_MODULES_CANNOT_RUN();
  Program prog(program());
  TreeType huge = prog.tree_type("huge", [&](TreeTypeBuilder& b) {
    Field v = b.field(i32, "v");
    b.root().pointer(ij, 1024).capacity(4).pointer(ij, 1024).capacity(4).place(v);  // 2^40 elements
  });
  Kernel touch = prog.kernel("touch", {arg(huge, "h")}, [&](Args a) {
    Field v = a.tree("h").field("v");
    for_range(0, 1, [&](Expr) { v(3, 4) = 7; });
  });
  aot::Module m(prog, GetParam());
  m.add_tree_type("huge", huge);
  m.add_kernel("touch", touch);
  runtime::Module mod = runtime::Module::load(m.bytes(), "huge", options());
  runtime::Tree t = mod.instantiate("huge");
  mod.launch("touch", {t});
  EXPECT_EQ(t.read<int32_t>("v", {3, 4}), 7);
  EXPECT_THAT(error_of([&] { t.to_vector<int32_t>("v"); }),
              AllOf(HasSubstr("field 'v' has 1099511627776 elements"), HasSubstr("read single elements")));
}

// Grove's own kernels in a module are named after their tree type and
// field ("__write_root.a.b"); names with dots could make two alike, and the
// module was written for the runtime to refuse. The writer refuses it,
// naming both, and a module without the clash is written.
TEST_P(Aot, GeneratedKernelNamesThatClashAreRefusedWhenWritten) {
  Program prog(program());
  Field ab = prog.field(i32, "a.b");
  prog.root().pointer(i, 8).dense(i, 4).place(ab);
  TreeType t = prog.tree_type("root.a", [&](TreeTypeBuilder& b) {
    Field f = b.field(i32, "b");
    b.root().pointer(i, 8).dense(i, 4).place(f);
  });
  Kernel own = prog.kernel("own", [&] { for_range(0, 4, [&](Expr k) { ab(k) = k; }); });
  aot::Module m(prog, GetParam());
  m.add_kernel("own", own);
  m.add_tree_type("root.a", t);
  EXPECT_THAT(error_of([&] { (void)m.bytes(); }),
              AllOf(HasSubstr("field 'a.b' of tree type 'root'"), HasSubstr("field 'b' of tree type 'root.a'"),
                    HasSubstr("'__write_root.a.b'"), HasSubstr("rename one of them")));
  aot::Module fine(prog, GetParam());
  fine.add_kernel("own", own);
  fine.add_tree_type("roots_a", t);
  EXPECT_FALSE(fine.bytes().empty());
}

// Threads sharing a runtime::Module and its trees take turns: four threads
// instantiate trees, launch, write and read at once (this deadlocked), and
// every value is exact.
TEST_P(Aot, ThreadsSharingAModuleTakeTurns) {
  Program prog(program());
  Field total = prog.field(i64, "total", {});
  TreeType cells = prog.tree_type("cells", [&](TreeTypeBuilder& t) {
    Field v = t.field(i32, "v");
    t.root().pointer(i, 16).dense(i, 8).place(v);
  });
  Kernel add = prog.kernel("add", {arg(cells, "c"), arg(i64, "n")}, [&](Args a) {
    Field v = a.tree("c").field("v");
    for_range(0, 8, [&](Expr k) {
      atomic_add(total(), a["n"]);
      v(k * 16) = v(k * 16) + 1;
    });
  });
  aot::Module m(prog, GetParam());
  m.add_tree_type("cells", cells);
  m.add_kernel("add", add);
  SKIP_WHERE_MODULES_CANNOT_RUN();
  runtime::Module mod = runtime::Module::load(m.bytes(), "threads", options());
  constexpr int kThreads = 4, kLaunches = 20;
  std::vector<std::string> errors(kThreads);
  std::vector<int32_t> got(kThreads, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        runtime::Tree c = mod.instantiate("cells", "c" + std::to_string(t));
        for (int l = 0; l < kLaunches; ++l) mod.launch("add", {c, int64_t{t + 1}});
        c.write("v", {1}, t);
        mod.sync();
        got[static_cast<size_t>(t)] = c.read<int32_t>("v", {7 * 16}) * 100 + c.read<int32_t>("v", {1});
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[static_cast<size_t>(t)], "") << "thread " << t;
    EXPECT_EQ(got[static_cast<size_t>(t)], kLaunches * 100 + t) << "thread " << t;
  }
  EXPECT_EQ(mod.tree("root").read<int64_t>("total", {}), int64_t{8} * kLaunches * (1 + 2 + 3 + 4));
}

// The module backends compiled into this Grove.
std::vector<Arch> module_backends() {
  std::vector<Arch> out;
  for (Arch a : compiled_backends())
    if (a == Arch::Vulkan || a == Arch::Cuda) out.push_back(a);
  return out;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Aot);
INSTANTIATE_TEST_SUITE_P(Modules, Aot, ::testing::ValuesIn(module_backends()),
                         [](const ::testing::TestParamInfo<Arch>& info) { return std::string(arch_name(info.param)); });

}  // namespace
