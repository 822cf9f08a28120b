// runtime/aot/module.cpp — the AOT module file format (see module.h).
#include "runtime/aot/module.h"
#include "runtime/aot/formats.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "grove/error.h"
#include "runtime/core/bytes.h"

namespace grove::rt::aot {

namespace {

enum class Section : uint32_t { info = 1, tree_types = 2, kernels = 3 };
constexpr Section kSections[] = {Section::info, Section::tree_types, Section::kernels};

const char* section_name(Section s) {
  switch (s) {
    case Section::info: return "info";
    case Section::tree_types: return "tree types";
    case Section::kernels: return "kernels";
  }
  return "?";
}

// Tag, size, checksum.
constexpr size_t kSectionHeaderBytes = 4 + 8 + 4;
constexpr size_t kHeaderBytes = 4 + 4 + 4;

uint32_t fnv1a(std::span<const uint8_t> bytes) {
  uint32_t h = 2166136261u;
  for (uint8_t b : bytes) h = (h ^ b) * 16777619u;
  return h;
}

// ---- tree layouts ----------------------------------------------------------------

// Every word count and offset of a node, in one order for writing and reading.
template <typename S, typename F>
void node_numbers(S& s, F&& f) {
  f(s.chunk_size);
  f(s.num_cells);
  f(s.total_cells);
  f(s.requested_capacity);
  f(s.cell_words);
  f(s.container_words);
  f(s.component_offset);
  f(s.mask_words);
  f(s.num_chunks);
  f(s.max_cells);
  f(s.capacity);
  f(s.pool_entry_words);
  f(s.pool_offset);
  f(s.order_offset);
  f(s.spare_offset);
  f(s.queue_offset);
  f(s.in_use_offset);
  f(s.coords_offset);
  f(s.state_offset);
  f(s.list_offset);
  f(s.list_capacity);
  f(s.list_entry_words);
}

void write_layout(ByteWriter& w, const TreeLayout& l) {
  w.i32(l.root);
  w.i64(l.root_offset);
  w.i64(l.total_words);
  w.u32(static_cast<uint32_t>(l.nodes.size()));
  for (const SNodeLayout& s : l.nodes) {
    w.i32(s.id);
    w.u8(static_cast<uint8_t>(s.type));
    w.i32(s.parent);
    w.i32(s.tree);
    w.ints(s.children);
    w.i32(s.field);
    for (int64_t e : s.extent) w.i64(e);
    w.u32(s.axis_mask);
    w.u32(s.path_axes);
    for (int64_t e : s.shape) w.i64(e);
    w.i32(s.depth);
    node_numbers(s, [&](int64_t v) { w.i64(v); });
  }
  w.ints(l.pools);
  w.u32(static_cast<uint32_t>(l.fields.size()));
  for (const FieldLayout& f : l.fields) {
    w.i32(f.id);
    w.str(f.name);
    w.u8(static_cast<uint8_t>(f.dtype));
    w.i32(f.place);
    w.i64s(f.shape);
    w.i64s(f.offset);
  }
}

// Checks that a layout holds together, so that host walks over it (and the
// runtime's bookkeeping) stay inside the buffer it describes.
void check_layout(ByteReader& r, TreeLayout& l) {
  if (l.total_words < kHeaderWords || l.total_words > kMaxTreeWords)
    r.fail("a tree of " + std::to_string(l.total_words) + " words");
  if (l.root_offset < kHeaderWords || l.root_offset > l.total_words) r.fail("the root region starts at word " + std::to_string(l.root_offset));
  // `count` items of `per` words from `offset` (every number already
  // within +-2^40, so the product is exact in 128 bits).
  auto inside = [&](int64_t offset, int64_t count, const std::string& what, int64_t per = 1) {
    const __int128 words = static_cast<__int128>(count) * per;
    if (offset < 0 || count < 0 || per < 0 || words > l.total_words - offset)
      r.fail(what + " (from word " + std::to_string(offset) + ") lies outside the tree's " +
             std::to_string(l.total_words) + " words");
  };
  if (l.nodes.empty()) r.fail("a tree type without nodes");
  std::set<int> ids;
  for (const SNodeLayout& s : l.nodes) {
    if (s.id < 0 || s.id >= (1 << 20) || !ids.insert(s.id).second)
      r.fail("node id " + std::to_string(s.id) + " is negative, too large or repeated");
  }
  l.index();
  const SNodeLayout& root = l.nodes.front();
  if (root.id != l.root || root.type != SNodeType::root || root.parent != -1)
    r.fail("the first node is not the tree's root");
  inside(l.root_offset, root.container_words, "the root region");
  for (const SNodeLayout& s : l.nodes) {
    const std::string what = "SNode '" + s.name() + "'";
    node_numbers(s, [&](int64_t v) {
      if (v < -1 || v > kMaxCells) r.fail(what + " has a size or offset of " + std::to_string(v));
    });
  }
  for (const SNodeLayout& s : l.nodes) {
    const std::string what = "SNode '" + s.name() + "'";
    if (s.type != SNodeType::root && (!l.has_node(s.parent) || s.parent == s.id))
      r.fail(what + " has no parent in the tree");
    if (s.type != SNodeType::root) {
      const SNodeLayout& p = l.node(s.parent);
      if (std::find(p.children.begin(), p.children.end(), s.id) == p.children.end())
        r.fail(what + " is not among its parent's children");
      if (s.depth != p.depth + 1) r.fail(what + " is not one level below its parent");
      if (s.component_offset < 0 || s.container_words < 0 || s.component_offset > p.cell_words - s.container_words)
        r.fail(what + "'s container does not fit in its parent's cell");
    } else if (s.id != l.root) {
      r.fail("a second root");
    }
    for (int c : s.children)
      if (!l.has_node(c) || l.node(c).parent != s.id) r.fail(what + " names a child that is not its own");
    if ((s.type == SNodeType::place) != (s.field >= 0) || (s.type == SNodeType::place && !s.children.empty()))
      r.fail(what + ": only a place holds a field, and it has no children");
    for (int64_t e : s.extent)
      if (e < 1 || e > (int64_t{1} << 31)) r.fail(what + " has an extent of " + std::to_string(e));
    for (int64_t e : s.shape)
      if (e < 1 || e > kMaxCells) r.fail(what + " has an index space of " + std::to_string(e) + " on an axis");
    if (s.axis_mask >= (1u << kMaxAxes) || s.path_axes >= (1u << kMaxAxes)) r.fail(what + " splits an axis past the last");
    // Index spaces grow down the path by each node's extents (the walks
    // divide one by the other), and a container holds their product.
    __int128 cells = 1;
    for (size_t a = 0; a < kMaxAxes; ++a) {
      const __int128 above = s.type == SNodeType::root ? 1 : l.node(s.parent).shape[a];
      if (!((s.axis_mask >> a) & 1u) && s.extent[a] != 1) r.fail(what + " has an extent on an axis it does not split");
      if (static_cast<__int128>(s.shape[a]) != above * s.extent[a])
        r.fail(what + "'s index space on axis " + std::to_string(a) + " is not its parent's times its extent");
      cells *= s.extent[a];
    }
    const __int128 total_above = s.type == SNodeType::root ? 1 : l.node(s.parent).total_cells;
    if (cells != s.num_cells || static_cast<__int128>(s.total_cells) != total_above * s.num_cells)
      r.fail(what + "'s cell counts do not match its extents");
    if (s.num_cells < 1 || s.num_cells > kMaxCells || s.total_cells < 1 || s.total_cells > kMaxCells)
      r.fail(what + " has " + std::to_string(s.num_cells) + " cells per container");
    if (s.cell_words < 0 || s.mask_words < 0 || s.num_chunks < 0 || s.max_cells < 0 || s.max_cells > kMaxCells)
      r.fail(what + " has a negative size");
    if (s.type == SNodeType::dynamic && (s.chunk_size < 1 || s.chunk_size > s.num_cells))
      r.fail(what + " has chunks of " + std::to_string(s.chunk_size) + " cells");
    if (s.has_pool()) {
      if (s.capacity < 1 || s.capacity > kMaxPoolCapacity || s.pool_entry_words < 1)
        r.fail(what + " has a pool of " + std::to_string(s.capacity) + " entries of " + std::to_string(s.pool_entry_words) + " words");
      inside(s.pool_offset, s.capacity, what + "'s pool", s.pool_entry_words);
      inside(s.order_offset, s.capacity, what + "'s allocation order");
      inside(s.spare_offset, (s.capacity + 31) / 32, what + "'s spare bitmap");
      inside(s.queue_offset, s.capacity, what + "'s gc queue");
      if (s.type == SNodeType::pointer) {
        inside(s.in_use_offset, (s.capacity + 31) / 32, what + "'s in-use bits");
        inside(s.coords_offset, s.capacity, what + "'s entry coordinates", s.entry_coord_words());
      }
      inside(s.state_offset, kPoolStateWords, what + "'s pool state");
      if (s.state_offset + kPoolStateWords > l.root_offset) r.fail(what + "'s pool state lies past the header");
    }
    if (s.has_list()) {
      if (s.list_capacity < 1 || s.list_capacity > kMaxCells || s.list_entry_words < 1 || s.list_entry_words > 1 + kMaxAxes)
        r.fail(what + " has a list of " + std::to_string(s.list_capacity) + " entries of " +
               std::to_string(s.list_entry_words) + " words");
      inside(s.list_offset + 1, s.list_capacity, what + "'s list", s.list_entry_words);
      inside(s.list_offset, 1, what + "'s list length");
    }
    if (s.type == SNodeType::pointer && s.container_words < s.num_cells)
      r.fail(what + "'s containers are smaller than its slots");
  }
  for (int p : l.pools)
    if (!l.has_node(p) || !l.node(p).has_pool()) r.fail("pool " + std::to_string(p) + " is not a pointer or dynamic node");
  for (const FieldLayout& f : l.fields) {
    const std::string what = "field '" + f.name + "'";
    if (!l.has_node(f.place) || l.node(f.place).type != SNodeType::place || l.node(f.place).field != f.id)
      r.fail(what + " is not held by its place");
    if (f.dtype == DataType::unknown || static_cast<uint8_t>(f.dtype) > static_cast<uint8_t>(DataType::f64))
      r.fail(what + " has no type");
    if (static_cast<int>(f.shape.size()) != l.node(f.place).num_indices() ||
        (!f.offset.empty() && f.offset.size() != f.shape.size()))
      r.fail(what + " has " + std::to_string(f.shape.size()) + " indices, its place " +
             std::to_string(l.node(f.place).num_indices()));
    for (int64_t e : f.shape)
      if (e < 1 || e > kMaxCells) r.fail(what + " has an extent of " + std::to_string(e));
    for (int64_t o : f.offset)
      if (o < -(int64_t{1} << 40) || o > (int64_t{1} << 40)) r.fail(what + " has an offset of " + std::to_string(o));
    if (l.node(f.place).container_words < storage_words(f.dtype)) r.fail(what + " does not fit its place");
  }
}

TreeLayout read_layout(ByteReader& r) {
  TreeLayout l;
  l.root = r.i32();
  l.root_offset = r.i64();
  l.total_words = r.i64();
  const uint32_t n = r.count(4 + 1 + 4 + 4 + 4 + 4);
  l.nodes.resize(n);
  for (SNodeLayout& s : l.nodes) {
    s.id = r.i32();
    const uint8_t type = r.u8();
    if (type >= kSNodeTypes) r.fail("SNode kind " + std::to_string(type) + " does not exist");
    s.type = static_cast<SNodeType>(type);
    s.parent = r.i32();
    s.tree = r.i32();
    s.children = r.ints();
    s.field = r.i32();
    for (int64_t& e : s.extent) e = r.i64();
    s.axis_mask = r.u32();
    s.path_axes = r.u32();
    for (int64_t& e : s.shape) e = r.i64();
    s.depth = r.i32();
    node_numbers(s, [&](int64_t& v) { v = r.i64(); });
  }
  l.pools = r.ints();
  for (uint32_t f = r.count(4 + 4 + 1 + 4 + 4 + 4); f > 0; --f) {
    FieldLayout fl;
    fl.id = r.i32();
    fl.name = r.str();
    const uint8_t t = r.u8();
    if (t == 0 || t > static_cast<uint8_t>(DataType::f64)) r.fail("a field type " + std::to_string(t) + " that does not exist");
    fl.dtype = static_cast<DataType>(t);
    fl.place = r.i32();
    fl.shape = r.i64s();
    fl.offset = r.i64s();
    l.fields.push_back(std::move(fl));
  }
  check_layout(r, l);
  return l;
}

// ---- sections ------------------------------------------------------------------------

void write_section(ByteWriter& out, Section s, const std::vector<uint8_t>& payload) {
  out.u32(static_cast<uint32_t>(s));
  out.u64(payload.size());
  out.u32(fnv1a(payload));
  for (uint8_t b : payload) out.u8(b);
}

struct RawSection {
  Section kind;
  size_t begin, end;  // the whole section, header included
  std::span<const uint8_t> payload;
};

std::vector<RawSection> split(std::span<const uint8_t> bytes, const std::string& source) {
  ByteReader r(bytes, source);
  r.part("header");
  if (r.u32() != kModuleMagic) r.fail("not a Grove AOT module (wrong magic number)");
  const uint32_t version = r.u32();
  if (version != kModuleVersion)
    r.fail("module format version " + std::to_string(version) + "; this Grove reads version " +
           std::to_string(kModuleVersion) + " (save the module again with this Grove)");
  const uint32_t n = r.u32();
  if (n != std::size(kSections))
    r.fail(std::to_string(n) + " sections; a version " + std::to_string(kModuleVersion) + " module has " +
           std::to_string(std::size(kSections)));
  std::vector<RawSection> out;
  for (Section want : kSections) {
    const size_t begin = r.offset();
    r.part(std::string("section '") + section_name(want) + "'");
    const uint32_t tag = r.u32();
    if (tag != static_cast<uint32_t>(want)) r.fail("found a section tagged " + std::to_string(tag) + " in its place");
    const uint64_t size = r.u64();
    const uint32_t checksum = r.u32();
    if (size > r.left())
      r.fail("truncated: it needs " + std::to_string(size) + " bytes, " + std::to_string(r.left()) + " are left");
    std::span<const uint8_t> payload = bytes.subspan(r.offset(), static_cast<size_t>(size));
    for (uint64_t k = 0; k < size; ++k) r.u8();
    if (fnv1a(payload) != checksum) r.fail("its checksum does not match: the file is corrupt");
    out.push_back({want, begin, r.offset(), payload});
  }
  r.part("end");
  if (r.left() != 0) r.fail(std::to_string(r.left()) + " bytes after the last section");
  return out;
}

}  // namespace

void seal_checksums(std::span<uint8_t> bytes) {
  size_t at = kHeaderBytes;
  for (size_t n = 0; n < std::size(kSections); ++n) {
    if (bytes.size() < at + kSectionHeaderBytes) return;
    uint64_t size = 0;
    std::memcpy(&size, bytes.data() + at + 4, 8);
    const size_t payload = at + kSectionHeaderBytes;
    if (size > bytes.size() - payload) return;
    const uint32_t h = fnv1a(bytes.subspan(payload, static_cast<size_t>(size)));
    std::memcpy(bytes.data() + at + 12, &h, 4);
    at = payload + static_cast<size_t>(size);
  }
}

const ModuleTreeType* ModuleData::tree_type(std::string_view name) const {
  for (const ModuleTreeType& t : tree_types)
    if (t.name == name) return &t;
  return nullptr;
}

const ModuleTreeType* ModuleData::tree_type(int id) const {
  for (const ModuleTreeType& t : tree_types)
    if (t.id == id) return &t;
  return nullptr;
}

const KernelPlan* ModuleData::kernel(std::string_view name) const {
  for (const KernelPlan& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

Features features_of(std::span<const KernelPlan> kernels) {
  Features f;
  for (const KernelPlan& k : kernels) f |= k.features;
  return f;
}

std::vector<uint8_t> write_module(const ModuleData& m) {
  ByteWriter info;
  info.str(m.grove_version);
  info.str(m.backend);
  write_features(info, m.features);
  ByteWriter types;
  types.u32(static_cast<uint32_t>(m.tree_types.size()));
  for (const ModuleTreeType& t : m.tree_types) {
    types.i32(t.id);
    types.str(t.name);
    types.u32(t.own ? 1u : 0u);
    write_layout(types, t.layout);
  }
  ByteWriter kernels;
  kernels.u32(static_cast<uint32_t>(m.kernels.size()));
  for (const KernelPlan& k : m.kernels) kernels.bytes(serialize(k));
  ByteWriter out;
  out.u32(kModuleMagic);
  out.u32(kModuleVersion);
  out.u32(static_cast<uint32_t>(std::size(kSections)));
  write_section(out, Section::info, info.take());
  write_section(out, Section::tree_types, types.take());
  write_section(out, Section::kernels, kernels.take());
  return out.take();
}

std::vector<SectionSpan> module_sections(std::span<const uint8_t> bytes, std::string_view source) {
  std::vector<SectionSpan> out;
  for (const RawSection& s : split(bytes, std::string(source))) out.push_back({section_name(s.kind), s.begin, s.end});
  return out;
}

namespace {

ModuleData parse_module(std::span<const uint8_t> bytes, std::string_view source_view) {
  const std::string source(source_view);
  const std::vector<RawSection> sections = split(bytes, source);
  ModuleData m;
  {
    ByteReader r(sections[0].payload, source + ", section 'info'");
    m.grove_version = r.str();
    m.backend = r.str();
    m.features = read_features(r);
    if (r.left() != 0) r.fail("unread bytes at its end");
    if (module_format(m.backend) == nullptr) {
      std::string known;
      for (const ModuleFormat& f : module_formats()) known += (known.empty() ? "" : " and ") + std::string(f.name);
      r.fail("modules for backend '" + m.backend + "' cannot be loaded; Grove ships " + known + " modules");
    }
  }
  {
    ByteReader r(sections[1].payload, source + ", section 'tree types'");
    for (uint32_t n = r.count(4 + 4), k = 0; k < n; ++k) {
      r.part("tree type " + std::to_string(k));
      ModuleTreeType t;
      t.id = r.i32();
      t.name = r.str();
      r.part("tree type '" + t.name + "'");
      if (t.id < 0 || m.tree_type(t.id) != nullptr || m.tree_type(t.name) != nullptr || t.name.empty())
        r.fail("its id " + std::to_string(t.id) + " or its name is negative, empty or taken");
      const uint32_t own = r.u32();
      if (own > 1) r.fail("its 'own tree' flag is " + std::to_string(own) + ", not 0 or 1");
      t.own = own == 1;
      t.layout = read_layout(r);
      m.tree_types.push_back(std::move(t));
    }
    r.part("");
    if (r.left() != 0) r.fail("unread bytes at its end");
  }
  {
    ByteReader r(sections[2].payload, source + ", section 'kernels'");
    for (uint32_t n = r.count(8), k = 0; k < n; ++k) {
      r.part("kernel " + std::to_string(k));
      const std::vector<uint8_t> plan_bytes = r.bytes();
      KernelPlan p = deserialize_plan(plan_bytes, source + ", section 'kernels', kernel " + std::to_string(k));
      r.part("kernel '" + p.name + "'");
      if (p.name.empty() || m.kernel(p.name) != nullptr) r.fail("its name is empty or taken");
      if (p.backend() != m.backend)
        r.fail("it was compiled for '" + std::string(p.backend()) + "', the module for '" + m.backend + "'");
      if (!m.features.covers(p.features))
        r.fail("it needs device features the module's info does not list");
      for (size_t s = 0; s < p.slots.size(); ++s) {
        const TreeSlotPlan& slot = p.slots[s];
        if (slot.kind != TreeSlotPlan::Kind::tree) continue;
        const ModuleTreeType* t = m.tree_type(slot.tree_type);
        if (t == nullptr) r.fail("its tree slot " + std::to_string(s) + " names tree type " + std::to_string(slot.tree_type) + ", which the module lacks");
        if (slot.param < 0 ? !t->own : slot.param >= static_cast<int>(p.slots.size()))
          r.fail("its tree slot " + std::to_string(s) + " is bound to no tree argument, and tree type '" + t->name +
                 "' is not a Program's own tree");
      }
      for (size_t i = 0; i < p.tasks.size(); ++i) {
        const TaskPlan& task = p.tasks[i];
        auto has = [&](int slot, int snode) {
          if (slot < 0 || slot >= static_cast<int>(p.slots.size()) || p.slots[static_cast<size_t>(slot)].kind != TreeSlotPlan::Kind::tree)
            return false;
          return m.tree_type(p.slots[static_cast<size_t>(slot)].tree_type)->layout.has_node(snode);
        };
        if (task.snode >= 0 && !has(task.tree_slot, task.snode))
          r.fail("task " + std::to_string(i) + " names SNode " + std::to_string(task.snode) + ", which its tree type lacks");
        for (const TaskPlan::Modified& mod : task.modifies)
          if (!has(mod.slot, mod.snode))
            r.fail("task " + std::to_string(i) + " modifies SNode " + std::to_string(mod.snode) + ", which its tree type lacks");
      }
      module_format(m.backend)->check_code(p, r);  // the backend's code: SPIR-V per task, PTX, ...
      m.kernels.push_back(std::move(p));
    }
    r.part("");
    if (r.left() != 0) r.fail("unread bytes at its end");
  }
  return m;
}

}  // namespace

ModuleData read_module(std::span<const uint8_t> bytes, std::string_view source) {
  try {
    return parse_module(bytes, source);
  } catch (const FormatError&) {
    throw;
  } catch (const Error& e) {  // the byte reader's and the plans' own checks
    throw FormatError(e.what());
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error("cannot read '" + path + "': it is a directory, not a module file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "' for reading");
  std::vector<uint8_t> bytes;
  try {  // a read error of the stream (a device file, say) escapes as an exception
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception& e) {
    throw Error("cannot read '" + path + "': " + e.what());
  }
  if (in.bad()) throw Error("cannot read '" + path + "'");
  return bytes;
}

std::string describe(const ModuleData& m) {
  std::ostringstream o;
  o << "Grove AOT module, format version " << kModuleVersion << ", written by Grove " << m.grove_version << "\n";
  o << "backend: " << m.backend << "\n";
  o << module_format(m.backend)->describe_device(m);
  o << "tree types: " << m.tree_types.size() << "\n";
  for (const ModuleTreeType& t : m.tree_types) {
    o << "  " << t.name << " (type " << t.id << "): " << t.layout.total_words << " words ("
      << t.layout.total_words * 4 / 1024 << " KiB) per instance"
      << (t.own ? "; the Program's own tree: one instance, made at load" : "") << "\n";
    for (const SNodeLayout& s : t.layout.nodes) {
      if (s.type == SNodeType::place) continue;
      o << "    " << std::string(static_cast<size_t>(s.depth) * 2, ' ') << s.name() << ": " << s.num_cells
        << " cells per container";
      if (s.has_pool()) o << ", pool of " << s.capacity << " entries";
      o << "\n";
    }
    for (const FieldLayout& fl : t.layout.fields) {
      o << "    field " << fl.name << ": " << type_name(fl.dtype) << ", shape (";
      for (size_t d = 0; d < fl.shape.size(); ++d) o << (d ? ", " : "") << fl.shape[d];
      o << "), in " << t.layout.node(t.layout.node(fl.place).parent).name() << "\n";
    }
  }
  o << "kernels: " << m.kernels.size() << "\n";
  for (const KernelPlan& k : m.kernels) {
    const std::string code = module_format(m.backend)->describe_code(k);
    o << "  " << k.name << "(";
    bool first = true;
    for (const TreeSlotPlan& s : k.slots) {
      if (s.kind != TreeSlotPlan::Kind::tree || s.param < 0) continue;
      const ModuleTreeType* t = m.tree_type(s.tree_type);
      o << (first ? "" : ", ") << "tree " << s.param << ": " << (t ? t->name : "?");
      first = false;
    }
    for (const ArgPlan& a : k.args) {
      o << (first ? "" : ", ") << a.name << ": " << type_name(a.type);
      first = false;
    }
    o << "): " << k.tasks.size() << " tasks, " << code << "\n";
  }
  return o.str();
}

}  // namespace grove::rt::aot
