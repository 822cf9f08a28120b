// src/cuda/ptx.cpp — PTX from the shared LLVM code generator (see ptx.h).
#include "cuda/ptx.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "codegen_stamp.h"  // generated: GROVE_CODEGEN_STAMP
#include "grove/error.h"
#include "grove/version.h"
#include "ir/assert.h"
#include "llvm/emit.h"
#include "runtime/cuda/device.h"

// LLVM's NVPTX target, registered by hand: the native-target helpers only
// set up the host's.
extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace grove::cuda {

namespace fs = std::filesystem;

std::string find_cuda_toolkit() {
  std::error_code ec;
  for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0' && fs::is_directory(v, ec)) return v;
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (dir.empty()) continue;
      for (const char* tool : {"nvcc", "ptxas"})
        if (fs::exists(fs::path(dir) / tool, ec)) return fs::path(dir).parent_path().string();
    }
  }
  if (fs::is_directory("/usr/local/cuda", ec)) return "/usr/local/cuda";
  return "";
}

namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

// The oldest PTX ISA version that knows `sm` (the newer the version, the
// newer the driver it needs).
int ptx_version_for(int sm) {
  if (sm >= 89) return 78;
  if (sm >= 87) return 74;
  if (sm >= 86) return 71;
  if (sm >= 80) return 70;
  return 63;
}

// Functions a module declares from libdevice (`__nv_sinf`, ...).
bool needs_libdevice(const llvm::Module& m) {
  for (const llvm::Function& f : m)
    if (f.isDeclaration() && f.getName().starts_with("__nv_")) return true;
  return false;
}

// `v` of the lane whose index differs from this one's in the bits of
// `lanes`, the whole warp taking part (shfl.sync.bfly): 64-bit values as two
// words.
llvm::Value* shuffle_xor(llvm::IRBuilderBase& b, llvm::Value* v, uint32_t lanes) {
  auto word = [&](llvm::Value* w) {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {},
                             {b.getInt32(~0u), w, b.getInt32(lanes), b.getInt32(0x1f)});
  };
  llvm::Type* type = v->getType();
  if (type->getPrimitiveSizeInBits() == 32) return b.CreateBitCast(word(b.CreateBitCast(v, b.getInt32Ty())), type);
  llvm::Value* bits = b.CreateBitCast(v, b.getInt64Ty());
  llvm::Value* low = word(b.CreateTrunc(bits, b.getInt32Ty()));
  llvm::Value* high = word(b.CreateTrunc(b.CreateLShr(bits, 32), b.getInt32Ty()));
  llvm::Value* both = b.CreateOr(b.CreateZExt(low, b.getInt64Ty()), b.CreateShl(b.CreateZExt(high, b.getInt64Ty()), 32));
  return b.CreateBitCast(both, type);
}

// An NVPTX task: a kernel entry point taking (context, trees...,
// arguments...) whose parallel loop is grid-stride over the whole count,
// and libdevice's math (src/llvm/emit.h).
class NvptxHooks final : public llvm_backend::TargetHooks {
 public:
  // PTX names allow only letters, digits, '_' and '$': "<kernel>_t<i>_<kind>"
  // with every other character of the kernel's name as '_'.
  std::string entry_name(const std::string& kernel, size_t index, ir::TaskKind kind) const override {
    std::string name = kernel;
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "_" + name;
    return name + "_t" + std::to_string(index) + "_" + ir::op_name(kind);
  }
  llvm::FunctionType* task_type(llvm::LLVMContext& c, size_t trees, size_t args) const override {
    std::vector<llvm::Type*> params(1 + trees, llvm::PointerType::get(c, 0));
    params.insert(params.end(), args, llvm::Type::getInt64Ty(c));
    return llvm::FunctionType::get(llvm::Type::getVoidTy(c), params, false);
  }
  // A kernel entry point (LLVM 19 reads it from nvvm.annotations).
  void task_made(llvm::Module& m, llvm::Function& f) const override {
    llvm::LLVMContext& c = m.getContext();
    llvm::NamedMDNode* annotations = m.getOrInsertNamedMetadata("nvvm.annotations");
    llvm::Metadata* md[] = {llvm::ValueAsMetadata::get(&f), llvm::MDString::get(c, "kernel"),
                            llvm::ValueAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), 1))};
    annotations->addOperand(llvm::MDNode::get(c, md));
  }
  void bind(llvm::Function& f, const std::map<llvm_backend::TreeKey, uint32_t>& buffer_index,
            llvm_backend::Bindings& out) const override {
    out.context = f.getArg(0);
    for (const auto& [key, index] : buffer_index) out.trees[key] = f.getArg(index);
  }
  llvm::Value* arg_bits(llvm::IRBuilderBase&, llvm::Function& f, const llvm_backend::Bindings&, size_t trees,
                        int index) const override {
    return f.getArg(1 + static_cast<unsigned>(trees + static_cast<size_t>(index)));
  }
  bool count_functions() const override { return false; }
  uint32_t grid_threads() const override { return rt::cuda::kBlockThreads; }
  // Iteration k = this thread's index along `axis` modulo the grid's
  // threads along it, counted in 64 bits so that k + stride cannot wrap.
  llvm_backend::ParallelBounds parallel_bounds(llvm::IRBuilderBase& b, llvm::Function&,
                                               const std::function<llvm::Value*()>& count,
                                               unsigned axis) const override {
    auto sreg = [&](llvm::Intrinsic::ID id) { return b.CreateZExt(b.CreateIntrinsic(id, {}, {}), b.getInt64Ty()); };
    using I = llvm::Intrinsic::ID;
    static constexpr I kBlockDim[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x,
                                       llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y,
                                       llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_z};
    static constexpr I kGridDim[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x,
                                      llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
                                      llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z};
    static constexpr I kBlock[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
    static constexpr I kThread[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x,
                                     llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y,
                                     llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z};
    llvm_backend::ParallelBounds out;
    llvm::Value* threads = b.CreateMul(sreg(kBlockDim[axis]), sreg(kGridDim[axis]));
    out.first = b.CreateAdd(b.CreateMul(sreg(kBlock[axis]), sreg(kBlockDim[axis])), sreg(kThread[axis]));
    out.stride = threads;
    out.last = b.CreateZExt(count(), b.getInt64Ty());
    out.strided = true;
    return out;
  }
  // A warp's running sums added in registers (a butterfly of shuffles)
  // and by its lane 0 alone: one atomic per warp on the cell, not per
  // thread. Only where the whole warp is here (activemask): threads that
  // returned early or run apart each add their own, as a shuffle among
  // absent lanes reads nothing defined. Lane 0 has the warp's first index
  // along the outermost axis, where the task's loop runs (threads are
  // numbered x first, then y, then z): where it took no iteration, no lane
  // did.
  ThreadsSum sum_across_threads(llvm::IRBuilderBase& b, llvm::Function& f, llvm::Value* v,
                                llvm::Value* iterated) const override {
    llvm::LLVMContext& c = b.getContext();
    llvm::Value* whole = b.CreateICmpEQ(b.CreateIntrinsic(llvm::Intrinsic::nvvm_activemask, {}, {}), b.getInt32(~0u));
    llvm::BasicBlock* apart = b.GetInsertBlock();
    auto* warp = llvm::BasicBlock::Create(c, "warp.sum", &f);
    auto* summed = llvm::BasicBlock::Create(c, "warp.summed", &f);
    b.CreateCondBr(whole, warp, summed);
    b.SetInsertPoint(warp);
    llvm::Value* s = v;
    for (uint32_t lanes = 16; lanes >= 1; lanes /= 2) {
      llvm::Value* other = shuffle_xor(b, s, lanes);
      s = v->getType()->isFloatingPointTy() ? b.CreateFAdd(s, other) : b.CreateAdd(s, other);
    }
    llvm::BasicBlock* reduced = b.GetInsertBlock();
    b.CreateBr(summed);
    b.SetInsertPoint(summed);
    llvm::PHINode* sum = b.CreatePHI(v->getType(), 2);
    sum->addIncoming(v, apart);
    sum->addIncoming(s, reduced);
    llvm::Value* lane0 = b.CreateICmpEQ(b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_laneid, {}, {}),
                                        b.getInt32(0));
    llvm::Value* adds = b.CreateOr(b.CreateNot(whole), lane0);
    return {sum, iterated != nullptr ? b.CreateAnd(adds, iterated) : adds};
  }
  // A counter the warp's threads here add to (a bump allocator's tickets,
  // a list's length): the lowest of them adds for all, the others get its
  // old value by a shuffle among exactly those threads (activemask; the
  // shuffle waits for each of them), and each takes old + (the threads
  // before it) * v, as the adds one after another in lane order would have
  // returned. CUDA's own compiler makes such adds so. Where nothing reads
  // the old value, the leader's add is all.
  llvm::Value* counter_add(llvm::IRBuilderBase& b, llvm::Function& f, llvm::Value* v, bool old_used,
                           const std::function<llvm::Value*(llvm::Value* amount)>& add) const override {
    using I = llvm::Intrinsic::ID;
    llvm::LLVMContext& c = b.getContext();
    auto sreg = [&](I id) { return b.CreateIntrinsic(id, {}, {}); };
    llvm::Value* here = sreg(llvm::Intrinsic::nvvm_activemask);
    llvm::Value* first = b.CreateIntrinsic(llvm::Intrinsic::cttz, {b.getInt32Ty()}, {here, b.getTrue()});
    llvm::Value* count = b.CreateIntrinsic(llvm::Intrinsic::ctpop, {b.getInt32Ty()}, {here});
    llvm::Value* before = b.CreateIntrinsic(llvm::Intrinsic::ctpop, {b.getInt32Ty()},
                                            {b.CreateAnd(here, sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_lanemask_lt))});
    llvm::Value* leads = b.CreateICmpEQ(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_laneid), first);
    llvm::BasicBlock* others = b.GetInsertBlock();
    auto* lead = llvm::BasicBlock::Create(c, "counter.add", &f);
    auto* added = llvm::BasicBlock::Create(c, "counter.added", &f);
    b.CreateCondBr(leads, lead, added);
    b.SetInsertPoint(lead);
    llvm::Value* old = add(b.CreateMul(count, v));
    llvm::BasicBlock* lead_end = b.GetInsertBlock();
    b.CreateBr(added);
    b.SetInsertPoint(added);
    if (!old_used) return b.getInt32(0);  // (a failure count, say: no shuffle)
    llvm::PHINode* leaders = b.CreatePHI(b.getInt32Ty(), 2);
    leaders->addIncoming(b.getInt32(0), others);
    leaders->addIncoming(old, lead_end);
    llvm::Value* base = b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, {},
                                          {here, leaders, first, b.getInt32(0x1f)});
    return b.CreateAdd(base, b.CreateMul(before, v));
  }
  // A summing loop's launch is capped so that each thread takes up to 16
  // iterations (as on Vulkan, src/spirv/codegen_internal.h's
  // kReductionIterations; the CUDA device keeps the GPU full of threads
  // however): with the warp's sum, one atomic per 512.
  uint32_t iterations_per_sum() const override { return 16; }
  // libdevice's, linked into the module before it is optimised.
  std::string math_function(const std::string& name) const override { return "__nv_" + name; }
  bool exact_frem() const override { return false; }  // NVPTX lowers frem inexactly
  unsigned cas_words() const override { return 1; }  // f32 atomic adds are native there
};

}  // namespace

struct PtxCompiler::Impl {
  int sm = 0;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::mutex mutex;  // the target machine is not thread-safe
  std::unique_ptr<llvm::MemoryBuffer> libdevice;  // read on first use
  std::string libdevice_path;

  // Links what `module` calls of libdevice into it, internal, so that the
  // optimiser inlines it and drops the rest.
  void link_libdevice(llvm::Module& module, const std::string& kernel) {
    if (!libdevice) {
      const std::string root = find_cuda_toolkit();
      if (root.empty())
        throw Error("kernel '" + kernel + "' calls a math function, which on CUDA comes from the CUDA toolkit's "
                    "libdevice, and no toolkit was found: set CUDA_PATH to it (it holds nvvm/libdevice)");
      libdevice_path = (fs::path(root) / "nvvm" / "libdevice" / "libdevice.10.bc").string();
      auto buffer = llvm::MemoryBuffer::getFile(libdevice_path);
      if (!buffer)
        throw Error("kernel '" + kernel + "' calls a math function, which on CUDA comes from libdevice, and " +
                    libdevice_path + " cannot be read (" + buffer.getError().message() +
                    "): set CUDA_PATH to a CUDA toolkit that has it");
      libdevice = std::move(*buffer);
    }
    // Read lazily: the linker materialises only the functions it takes.
    auto parsed = llvm::getLazyBitcodeModule(libdevice->getMemBufferRef(), module.getContext());
    if (!parsed) {
      std::string why = llvm::toString(parsed.takeError());
      throw Error("libdevice at " + libdevice_path + " is not LLVM bitcode this LLVM reads (" + why + ")");
    }
    std::unique_ptr<llvm::Module> lib = std::move(*parsed);
    lib->setTargetTriple(module.getTargetTriple());
    lib->setDataLayout(module.getDataLayout());
    if (llvm::Linker::linkModules(module, std::move(lib), llvm::Linker::LinkOnlyNeeded,
                                  [](llvm::Module& m, const llvm::StringSet<>& linked) {
                                    for (llvm::Function& f : m)
                                      if (!f.isDeclaration() && linked.contains(f.getName()))
                                        f.setLinkage(llvm::GlobalValue::InternalLinkage);
                                  }))
      throw InternalError("LLVM could not link libdevice into kernel '" + kernel + "'");
    // libdevice asks __nvvm_reflect whether to flush denormals: no, as on
    // every other backend.
    module.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
  }
};

PtxCompiler::PtxCompiler(int sm) : impl_(std::make_unique<Impl>()) {
  if (sm < kMinSm || sm > kMaxSm)
    throw Error("CUDA target sm_" + std::to_string(sm) + " is not supported: Grove's code generator (LLVM 19) emits "
                "sm_" + std::to_string(kMinSm) + " to sm_" + std::to_string(kMaxSm) +
                " (newer GPUs run sm_" + std::to_string(kMaxSm) + " code)");
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  impl_->sm = sm;
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (target == nullptr) throw Error("this LLVM has no NVPTX target (" + error + ")");
  const std::string cpu = "sm_" + std::to_string(sm);
  const std::string features = "+ptx" + std::to_string(ptx_version_for(sm));
  impl_->machine.reset(target->createTargetMachine(kTriple, cpu, features, llvm::TargetOptions(), std::nullopt,
                                                   std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!impl_->machine) throw Error("LLVM cannot target " + cpu);
}

PtxCompiler::~PtxCompiler() = default;

int PtxCompiler::sm() const { return impl_->sm; }

std::string PtxCompiler::target() const { return std::string(kTriple) + ", sm_" + std::to_string(impl_->sm); }

std::string PtxCompiler::cache_key() const {
  // The stamp stands for the code generator's own source, as on the CPU.
  return std::string("grove ") + kVersion + ", PTX generator " + GROVE_CODEGEN_STAMP + "\nllvm " +
         LLVM_VERSION_STRING + "\ntarget " + target() + " +ptx" + std::to_string(ptx_version_for(impl_->sm)) +
         "\nlibdevice " + find_cuda_toolkit() + "\n";
}

PtxCode PtxCompiler::compile(const ir::Kernel& kernel, bool debug, bool keep_text) {
  if (!ir::is_lowered(kernel.stage))
    throw InternalError("PTX codegen: kernel '" + kernel.name() + "' is not lowered");
  llvm_backend::CodegenOptions options;
  options.debug = debug;
  std::lock_guard<std::mutex> lock(impl_->mutex);
  llvm::LLVMContext context;
  llvm::Module module(kernel.name(), context);
  module.setTargetTriple(kTriple);
  module.setDataLayout(impl_->machine->createDataLayout());
  static const NvptxHooks nvptx;
  llvm_backend::Emitted emitted = llvm_backend::emit_kernel(kernel, options, nvptx, module);
  PtxCode out;
  if (keep_text) out.ir_before = llvm_backend::to_text(module);
  if (needs_libdevice(module)) impl_->link_libdevice(module, kernel.name());
  llvm_backend::optimize(module, *impl_->machine);
  if (keep_text) out.ir_after = llvm_backend::to_text(module);
  llvm::SmallVector<char, 0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if (impl_->machine->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    throw InternalError("LLVM cannot emit PTX (kernel '" + kernel.name() + "')");
  pm.run(module);
  out.ptx.assign(text.data(), text.size());
  out.tasks = std::move(emitted.tasks);
  out.messages = std::move(emitted.messages);
  return out;
}

}  // namespace grove::cuda
