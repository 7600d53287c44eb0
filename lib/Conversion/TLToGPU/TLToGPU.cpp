//===- TLToGPU.cpp - outlined tl kernels to gpu.func and launches ---------===//
//
// Each kernel function `tl-outline-kernels` made (`llmc.kernel`: one nest
// whose top loops the GPU schedule bound to blockIdx/threadIdx) becomes a
// `gpu.func` of the module `@llmc_kernels` with the same arguments, and each
// call of it a `gpu.launch_func`:
// - a loop bound to blockIdx.{x,y,z} is the grid's extent on that axis (its
//   upper bound, computed in the caller from the call's operands); in the
//   kernel its variable is the workgroup's id;
// - a loop bound to threadIdx.{x,y,z} is the workgroup's extent: a constant,
//   or min(constant, x) (a split's last, partial tile), whose threads past
//   x run nothing (scf.if); its variable is the thread's id;
// - the rest of the nest lowers as on the CPU (unrolled loops copied,
//   serial loops to scf.for, blocks inlined with their accesses spelled
//   out); a vectorized or parallel loop inside a kernel is an error.
//
//===----------------------------------------------------------------------===//
#include "Conversion/TLToGPU/TLToGPU.h"
#include "Conversion/TLToSCF/TLToSCF.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc {
#define GEN_PASS_DEF_CONVERTTLTOGPU
#include "Conversion/Passes.h.inc"
} // namespace llmc

using namespace mlir;
using namespace llmc;

namespace {

/// The bound loops of one kernel, by axis (0..2 = x, y, z).
struct Binding {
  std::array<tl::ForOp, 3> blocks, threads;
  std::array<int64_t, 3> threadCount = {1, 1, 1};
};

/// The constant a workgroup's loop runs to: its bound, or C of min(C, x).
static std::optional<int64_t> threadExtent(tl::ForOp loop) {
  Value ub = loop.getUpperBound();
  if (auto c = getConstantIntValue(ub))
    return c;
  Operation *def = ub.getDefiningOp();
  if (isa_and_nonnull<arith::MinUIOp, arith::MinSIOp>(def))
    for (Value o : def->getOperands())
      if (auto c = getConstantIntValue(o))
        return c;
  return std::nullopt;
}

/// Collects and checks the bound loops of kernel `fn`: the chain of
/// thread_bound loops at the top of its one nest, each axis once, blockIdx
/// loops outside threadIdx ones.
static FailureOr<Binding> collectBinding(func::FuncOp fn) {
  Binding b;
  SmallVector<tl::ForOp> tops;
  for (auto l : fn.getBody().getOps<tl::ForOp>())
    tops.push_back(l);
  if (tops.size() != 1)
    return fn.emitOpError("a GPU kernel must hold one loop nest (has ")
           << tops.size() << ")";
  bool inThreads = false;
  for (tl::ForOp l = tops[0]; l && l.getKind() == tl::LoopKind::thread_bound;) {
    StringRef axis = *l.getThread();
    bool isBlock = axis.starts_with("blockIdx");
    unsigned dim = axis.back() - 'x';
    auto &slot = isBlock ? b.blocks[dim] : b.threads[dim];
    if (slot)
      return l.emitOpError("binds ") << axis << " a second time";
    if (isBlock && inThreads)
      return l.emitOpError("is bound to ")
             << axis << " inside a loop bound to a thread axis";
    if (getConstantIntValue(l.getLowerBound()) != 0 ||
        getConstantIntValue(l.getStep()) != 1)
      return l.emitOpError("a loop bound to a GPU axis must run from 0 "
                           "with step 1");
    if (!isBlock) {
      std::optional<int64_t> n = threadExtent(l);
      if (!n || *n < 1)
        return l.emitOpError("a loop bound to ")
               << axis << " needs a constant extent (or min(constant, x))";
      b.threadCount[dim] = *n;
      inThreads = true;
    } else if (Operation *def = l.getUpperBound().getDefiningOp();
               def && !isa<func::FuncOp>(def->getParentOp())) {
      return l.emitOpError("the grid's extent on ")
             << axis << " must not depend on the loops around it";
    }
    slot = l;
    // The next loop of the chain: the only loop in the body.
    tl::ForOp next;
    for (auto inner : l.getBody()->getOps<tl::ForOp>()) {
      if (next) {
        next = {};
        break;
      }
      next = inner;
    }
    l = next;
  }
  // Every other loop must be one the kernel runs serially.
  WalkResult r = fn.walk([&](tl::ForOp l) {
    if (l.getKind() == tl::LoopKind::thread_bound &&
        !llvm::is_contained(b.blocks, l) && !llvm::is_contained(b.threads, l)) {
      l.emitOpError("is bound to ")
          << *l.getThread()
          << " but is not in the chain of bound loops at the top of the nest";
      return WalkResult::interrupt();
    }
    if (l.getKind() == tl::LoopKind::parallel ||
        l.getKind() == tl::LoopKind::vectorized) {
      l.emitOpError("is ")
          << stringifyLoopKind(l.getKind())
          << ", which a GPU kernel does not lower (bind it to a thread axis, "
             "or leave it serial)";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (r.wasInterrupted())
    return failure();
  if (llvm::none_of(b.threads, [](tl::ForOp l) { return bool(l); }) &&
      llvm::none_of(b.blocks, [](tl::ForOp l) { return bool(l); }))
    return fn.emitOpError("a GPU kernel's nest must bind its top loops to "
                          "blockIdx/threadIdx (the GPU schedule does)");
  return b;
}

/// Replaces bound loop `l` (in the kernel) by its body, its variable the
/// axis' id, guarded by id < bound unless the launch covers it exactly.
static void inlineBound(RewriterBase &rw, tl::ForOp l, bool isBlock,
                        unsigned dim, int64_t count) {
  Location loc = l.getLoc();
  rw.setInsertionPoint(l);
  auto d = static_cast<gpu::Dimension>(dim);
  Value id = isBlock ? gpu::BlockIdOp::create(rw, loc, d).getResult()
                     : gpu::ThreadIdOp::create(rw, loc, d).getResult();
  Block *body = l.getBody();
  rw.eraseOp(body->getTerminator());
  bool exact = isBlock || getConstantIntValue(l.getUpperBound()) == count;
  if (exact) {
    rw.inlineBlockBefore(body, l, {id});
  } else {
    Value inRange = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::ult,
                                          id, l.getUpperBound());
    auto guard = scf::IfOp::create(rw, loc, inRange, /*else=*/false);
    rw.inlineBlockBefore(body, guard.thenBlock()->getTerminator(), {id});
  }
  rw.eraseOp(l);
}

/// Clones the computation of `v` (pure ops of the kernel function's body,
/// from its arguments) at `b`'s insertion point, its arguments mapped.
static FailureOr<Value> cloneFromArgs(OpBuilder &b, Value v, IRMapping &map) {
  if (Value m = map.lookupOrNull(v))
    return m;
  Operation *def = v.getDefiningOp();
  if (!def || def->getNumRegions() || !isPure(def))
    return failure();
  for (Value o : def->getOperands())
    if (failed(cloneFromArgs(b, o, map)))
      return failure();
  b.clone(*def, map);
  return map.lookup(v);
}

struct ConvertTLToGPUPass : llmc::impl::ConvertTLToGPUBase<ConvertTLToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("llmc.kernel"))
        kernels.push_back(fn);
    if (kernels.empty())
      return;
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    OpBuilder mb(ctx);
    mb.setInsertionPointToEnd(module.getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(mb, module.getLoc(), "llmc_kernels");
    SymbolTable kernelSymbols(gpuModule);
    IRRewriter rw(ctx);
    SymbolTable symbols(module);
    for (func::FuncOp fn : kernels) {
      FailureOr<Binding> binding = collectBinding(fn);
      if (failed(binding))
        return signalPassFailure();
      // The kernel: the function's arguments, its body with the bound
      // loops replaced by ids.
      rw.setInsertionPointToEnd(gpuModule.getBody());
      auto kernel = gpu::GPUFuncOp::create(rw, fn.getLoc(), fn.getName(),
                                           fn.getFunctionType());
      kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      UnitAttr::get(ctx));
      kernel.setKnownBlockSizeAttr(rw.getDenseI32ArrayAttr(
          {int32_t(binding->threadCount[0]), int32_t(binding->threadCount[1]),
           int32_t(binding->threadCount[2])}));
      Block &entry = kernel.getBody().front();
      IRMapping map;
      for (auto [from, to] : llvm::zip(fn.getArguments(), entry.getArguments()))
        map.map(from, to);
      rw.setInsertionPointToEnd(&entry);
      for (Operation &op : fn.getBody().front().without_terminator())
        rw.clone(op, map);
      gpu::ReturnOp::create(rw, fn.getLoc());
      for (unsigned dim = 0; dim < 3; ++dim) {
        if (tl::ForOp l = binding->blocks[dim])
          inlineBound(rw, cast<tl::ForOp>(map.lookup(l.getOperation())), true,
                      dim, 0);
      }
      for (unsigned dim = 0; dim < 3; ++dim) {
        if (tl::ForOp l = binding->threads[dim])
          inlineBound(rw, cast<tl::ForOp>(map.lookup(l.getOperation())), false,
                      dim, binding->threadCount[dim]);
      }
      if (failed(unrollLoops(kernel)))
        return signalPassFailure();
      RewritePatternSet patterns(ctx);
      populateTLToSCFPatterns(patterns);
      if (failed(applyPatternsGreedily(kernel, std::move(patterns))))
        return signalPassFailure();
      // The launches.
      std::optional<SymbolTable::UseRange> uses =
          symbols.getSymbolUses(fn, module);
      SmallVector<func::CallOp> calls;
      if (uses)
        for (const SymbolTable::SymbolUse &use : *uses) {
          auto call = dyn_cast<func::CallOp>(use.getUser());
          if (!call) {
            use.getUser()->emitOpError("uses GPU kernel ")
                << fn.getName() << " other than by a call";
            return signalPassFailure();
          }
          calls.push_back(call);
        }
      for (func::CallOp call : calls) {
        OpBuilder b(call);
        IRMapping args;
        for (auto [from, to] : llvm::zip(fn.getArguments(), call.getOperands()))
          args.map(from, to);
        Value one = arith::ConstantIndexOp::create(b, call.getLoc(), 1);
        gpu::KernelDim3 grid{one, one, one}, block{one, one, one};
        Value *gridDims[] = {&grid.x, &grid.y, &grid.z};
        Value *blockDims[] = {&block.x, &block.y, &block.z};
        for (unsigned dim = 0; dim < 3; ++dim) {
          if (tl::ForOp l = binding->blocks[dim]) {
            FailureOr<Value> extent = cloneFromArgs(b, l.getUpperBound(), args);
            if (failed(extent)) {
              l.emitOpError("the grid's extent is not computed from the "
                            "kernel's arguments");
              return signalPassFailure();
            }
            *gridDims[dim] = *extent;
          }
          *blockDims[dim] = arith::ConstantIndexOp::create(
              b, call.getLoc(), binding->threadCount[dim]);
        }
        gpu::LaunchFuncOp::create(b, call.getLoc(), kernel, grid, block,
                                  /*dynamicSharedMemorySize=*/Value(),
                                  call.getOperands());
        call.erase();
      }
      fn.erase();
    }
  }
};

} // namespace
