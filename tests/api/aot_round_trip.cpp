// tests/api/aot_round_trip.cpp — with GROVE_TEST_AOT_ROUND_TRIP=1 set,
// every Program of this test binary that ran kernels on Vulkan is, when it
// is destroyed, saved as an AOT module (each kernel it launched, with the
// trees they use: tree types, and its own trees as "root", "root1"...),
// loaded by grove_runtime on a device of its own, and its host operations
// are replayed there in order (test_hooks.h: launches with the same
// arguments, writes, deactivations, new instances, syncs). Every read must
// give the bytes the Program gave; where the Program raised, the runtime
// must raise too (the replay ends there); and at the end every field of
// every tree in the module must hold the same values bit for bit, with the
// same active cells and pool use per SNode. Operations on trees no kernel
// used (so not in the module) are left out. ctest runs every suite of
// the API tests so (tests/CMakeLists.txt), with lavapipe on one thread:
// results that depend on the order parallel invocations run in (the
// positions of parallel appends) are then the same on both sides.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend_fixture.h"
#include "grove/aot.h"
#include "grove/runtime.h"
#include "program/program_impl.h"
#include "program/test_hooks.h"
#include "runtime/aot/module.h"

namespace {

using namespace grove;
using detail::HostOp;

struct Totals {
  int programs = 0, operations = 0, reads = 0, fields = 0, skipped = 0, raised = 0;
};
Totals g_totals;

const char* kind_name(HostOp::Kind k) {
  switch (k) {
    case HostOp::Kind::launch: return "launch";
    case HostOp::Kind::write: return "write";
    case HostOp::Kind::read: return "read";
    case HostOp::Kind::copy_out: return "to_vector";
    case HostOp::Kind::deactivate: return "deactivate_all";
    case HostOp::Kind::instantiate: return "instantiate";
    case HostOp::Kind::sync: return "sync";
  }
  return "?";
}

std::string kernel_name(int id) { return "k" + std::to_string(id); }

class Replay {
 public:
  Replay(Program& prog, const std::vector<HostOp>& trace) : prog_(prog), p_(*prog.impl()), trace_(trace) {}

  void run() {
    std::set<int> launched;
    for (const HostOp& op : trace_)
      if (op.kind == HostOp::Kind::launch && op.kernel >= 0) launched.insert(op.kernel);
    if (launched.empty()) return;  // nothing compiled: nothing to take ahead of time
    const std::string test = current_test();
    aot::Module m(prog_, Arch::Vulkan);
    for (int k : launched) m.add_kernel(kernel_name(k), Kernel(p_.weak_from_this(), k));
    const std::vector<uint8_t> bytes = m.bytes();
    data_ = rt::aot::read_module(bytes, test);
    runtime::Options options;
    options.debug = p_.config.debug;
    mod_.emplace(runtime::Module::load(bytes, test, options));
    for (const rt::aot::ModuleTreeType& t : data_.tree_types)
      if (t.own) own_.emplace(t.id, mod_->tree(t.name));

    ++g_totals.programs;
    for (size_t n = 0; n < trace_.size(); ++n) {
      const HostOp& op = trace_[n];
      where_ = test + ", operation " + std::to_string(n) + " (" + kind_name(op.kind) + ")";
      ++g_totals.operations;
      if (op.raised) {
        bool raised = false;
        try {
          apply(op);
        } catch (const Error&) {
          raised = true;
        }
        EXPECT_TRUE(raised) << where_ << ": the Program raised here, grove_runtime did not";
        ++g_totals.raised;
        return;  // the Program's trace ends with it
      }
      try {
        apply(op);
      } catch (const Error& e) {
        ADD_FAILURE() << where_ << ": grove_runtime raised where the Program did not: " << e.what();
        return;
      }
    }
    where_ = test + ", at the end";
    compare_everything();
  }

 private:
  static std::string current_test() {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    return t == nullptr ? std::string("a Program outside any test") : std::string(t->test_suite_name()) + "." + t->name();
  }

  // The module's tree for `tree` of the Program (own: `instance` -1), or
  // nullptr when no kernel used it (then it is not in the module).
  runtime::Tree* tree_of(int tree, int instance) {
    if (instance < 0) {
      auto it = own_.find(tree);
      return it == own_.end() ? nullptr : &it->second;
    }
    auto it = instances_.find(instance);
    return it == instances_.end() ? nullptr : &it->second;
  }
  int tree_of_field(int field) const { return p_.forest().snode(p_.forest().place_of(field)).tree; }
  const rt::FieldLayout& layout_of(int field) const {
    const rt::FieldLayout* f = data_.tree_type(tree_of_field(field))->layout.field(field);
    if (f == nullptr) throw std::logic_error("field " + std::to_string(field) + " missing from the module's layout");
    return *f;
  }

  void apply(const HostOp& op) {
    switch (op.kind) {
      case HostOp::Kind::launch: {
        const rt::KernelPlan* plan = data_.kernel(kernel_name(op.kernel));
        ASSERT_NE(plan, nullptr) << where_;
        ASSERT_EQ(plan->args.size(), op.bits.size()) << where_;
        std::vector<runtime::Arg> args;
        for (size_t a = 0; a < op.bits.size(); ++a) {
          runtime::Arg v(uint64_t{0});
          v.type = compute_type(plan->args[a].type);  // the Program's converted bits are of it
          v.bits = op.bits[a];
          args.push_back(v);
        }
        for (int instance : op.trees) {
          runtime::Tree* t = tree_of(-1, instance);
          ASSERT_NE(t, nullptr) << where_ << ": instance " << instance << " was not made in the module";
          args.emplace_back(*t);
        }
        mod_->launch(kernel_name(op.kernel), args);
        return;
      }
      case HostOp::Kind::write: {
        runtime::Tree* t = tree_of(tree_of_field(op.fields[0]), op.instance);
        if (t == nullptr) return skip();
        const rt::FieldLayout& f = layout_of(op.fields[0]);
        t->write_raw(f.name, op.index, compute_type(f.dtype), &op.bits[0]);
        return;
      }
      case HostOp::Kind::read: {
        runtime::Tree* t = tree_of(tree_of_field(op.fields[0]), op.instance);
        if (t == nullptr) return skip();
        std::vector<uint8_t> got(op.bytes.size() + 8, 0);
        t->read_raw(layout_of(op.fields[0]).name, op.index, op.as, got.data());
        got.resize(op.bytes.size());
        ++g_totals.reads;
        EXPECT_EQ(got, op.bytes) << where_ << ": field '" << layout_of(op.fields[0]).name << "' reads differently";
        return;
      }
      case HostOp::Kind::copy_out: {
        runtime::Tree* t = tree_of(tree_of_field(op.fields[0]), op.instance);
        if (t == nullptr) return skip();
        const size_t comps = op.fields.size();
        const size_t size = op.as == DataType::u1 ? 1 : static_cast<size_t>(bit_width(op.as) / 8);
        std::vector<uint8_t> got(op.bytes.size(), 0);
        for (size_t c = 0; c < comps; ++c) {
          const std::string& name = layout_of(op.fields[c]).name;
          std::vector<uint8_t> one(static_cast<size_t>(t->num_elements(name)) * size + 8);
          t->copy_out(name, op.as, one.data());
          for (size_t e = 0; (e * comps + c + 1) * size <= got.size(); ++e)
            std::memcpy(&got[(e * comps + c) * size], &one[e * size], size);
        }
        ++g_totals.reads;
        EXPECT_EQ(got, op.bytes) << where_ << ": field '" << layout_of(op.fields[0]).name << "' copies out differently";
        return;
      }
      case HostOp::Kind::deactivate: {
        const ir::SNodeDecl& s = p_.forest().snode(op.snode);
        runtime::Tree* t = tree_of(s.tree, op.instance);
        if (t == nullptr) return skip();
        t->deactivate_all(s.name());
        return;
      }
      case HostOp::Kind::instantiate: {
        const rt::aot::ModuleTreeType* type = data_.tree_type(op.type);
        if (type == nullptr) return skip();
        instances_.emplace(op.instance, mod_->instantiate(type->name, op.name));
        return;
      }
      case HostOp::Kind::sync: mod_->sync(); return;
    }
  }

  void skip() { ++g_totals.skipped; }

  // Every field of every tree in the module, and its SNodes' active cells
  // and pool use, against the Program's.
  void compare_everything() {
    struct Compared {
      int instance;  // the Program's
      bool own;      // the instance of one of its own trees (host handles name it -1)
      runtime::Tree* tree;
    };
    std::vector<Compared> trees;
    for (auto& [tree, t] : own_) trees.push_back({p_.trees.own_instance(tree), true, &t});
    for (auto& [instance, t] : instances_)
      if (p_.context->alive(instance)) trees.push_back({instance, false, &t});
    for (const auto& [instance, own, t] : trees) {
      const rt::aot::ModuleTreeType& type = *data_.tree_type(p_.context->instance(instance).type);
      for (const rt::FieldLayout& f : type.layout.fields) {
        int64_t elements = 1;
        for (int64_t e : f.shape) elements *= e;
        if (elements > (int64_t{1} << 22)) continue;  // a sparse index space too large to copy whole
        const Field field(p_.weak_from_this(), {f.id}, 1, 1, own ? -1 : instance);
        std::vector<uint8_t> want, got;
        values(field, *t, f, want, got);
        ++g_totals.fields;
        EXPECT_TRUE(want == got) << where_ << ": field '" << f.name << "' of tree '" << t->name() << "' differs";
      }
      std::map<std::string, std::pair<int64_t, int64_t>> program_stats;
      for (const rt::NodeStats& n : p_.context->stats(instance)) program_stats[n.name] = {n.active_cells, n.pool_used};
      for (const runtime::SNodeStats& s : t->stats()) {
        auto it = program_stats.find(s.name);
        ASSERT_NE(it, program_stats.end()) << where_ << ": SNode " << s.name;
        EXPECT_EQ(s.active_cells, it->second.first) << where_ << ": active cells of " << s.name;
        EXPECT_EQ(s.pool_used, it->second.second) << where_ << ": pool entries in use of " << s.name;
      }
    }
  }

  // The field's elements from the Program and from the module, as bytes of
  // 64-bit values (doubles for floats: f32 and f64 convert exactly).
  static void values(const Field& field, const runtime::Tree& t, const rt::FieldLayout& f, std::vector<uint8_t>& want,
                     std::vector<uint8_t>& got) {
    const DataType ct = compute_type(f.dtype);
    const bool fp = ct == DataType::f16 || ct == DataType::f32 || ct == DataType::f64;
    const DataType as = fp ? DataType::f64 : ct == DataType::u64 ? DataType::u64 : DataType::i64;
    std::vector<uint64_t> a;
    if (fp) {
      const std::vector<double> d = field.to_vector<double>();
      a.resize(d.size());
      std::memcpy(a.data(), d.data(), d.size() * 8);
    } else if (as == DataType::u64) {
      a = field.to_vector<uint64_t>();
    } else {
      const std::vector<int64_t> i = field.to_vector<int64_t>();
      a.assign(i.begin(), i.end());
    }
    std::vector<uint64_t> b(static_cast<size_t>(t.num_elements(f.name)));
    t.copy_out(f.name, as, b.data());
    want.assign(reinterpret_cast<const uint8_t*>(a.data()), reinterpret_cast<const uint8_t*>(a.data() + a.size()));
    got.assign(reinterpret_cast<const uint8_t*>(b.data()), reinterpret_cast<const uint8_t*>(b.data() + b.size()));
  }

  Program& prog_;
  detail::ProgramImpl& p_;
  const std::vector<HostOp>& trace_;
  rt::aot::ModuleData data_;
  std::optional<runtime::Module> mod_;
  std::map<int, runtime::Tree> own_;        // by the Program's tree id
  std::map<int, runtime::Tree> instances_;  // by the Program's instance
  std::string where_;
};

class Report : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!grove::testing::vulkan_unavailable_reason().empty()) {
      std::printf("AOT round trip skipped: no Vulkan: %s\n", grove::testing::vulkan_unavailable_reason().c_str());
      return;
    }
    std::printf("AOT round trip: %d Program(s) saved, loaded in grove_runtime and replayed: %d operations, %d reads "
                "and %d whole fields compared bit for bit, %d ended where the Program and the runtime raised, %d operations on "
                "trees no kernel used left out\n",
                g_totals.programs, g_totals.operations, g_totals.reads, g_totals.fields, g_totals.raised, g_totals.skipped);
  }
};

struct Install {
  Install() {
    const char* on = std::getenv("GROVE_TEST_AOT_ROUND_TRIP");
    if (on == nullptr || std::string(on) != "1") return;
    ::testing::AddGlobalTestEnvironment(new Report);  // gtest owns it
    detail::set_program_end_observer([](Program& prog, const std::vector<HostOp>& trace) {
      if (prog.arch() != Arch::Vulkan) return;
      try {
        Replay(prog, trace).run();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "AOT round trip: " << e.what();
      }
    });
  }
} g_install;

}  // namespace
