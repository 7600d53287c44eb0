//===- OutlineKernels.cpp - one function per distinct loop nest -----------===//
//
// Every top-level loop nest (but a band of the GEMM library, which the host
// calls) becomes a call of a private kernel function;
// kernels equal up to their blocks' names become one, so each distinct
// kernel is compiled once however many layers call it.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/NestEquivalence.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLOUTLINEKERNELS
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc;

static constexpr llvm::StringLiteral kKernelAttr = "llmc.kernel";

/// The type a kernel takes for a captured value: a strided memref with a
/// static offset (a slice, such as one layer's KV cache) takes any offset.
static Type kernelArgType(Type t) {
  auto mem = dyn_cast<MemRefType>(t);
  if (!mem)
    return t;
  auto strided = dyn_cast<StridedLayoutAttr>(mem.getLayout());
  if (!strided || ShapedType::isDynamic(strided.getOffset()))
    return t;
  auto layout = StridedLayoutAttr::get(t.getContext(), ShapedType::kDynamic,
                                       strided.getStrides());
  return MemRefType::get(mem.getShape(), mem.getElementType(), layout,
                         mem.getMemorySpace());
}

/// The name of the nest's last block (what the nest computes: `matmul`,
/// `softmax_max`) without the numbering that told the layers' copies
/// apart. A nest that also runs the remainder of a split (blocks named
/// `<name>_tail...` after the whole tiles' own) is named for the whole
/// tiles.
static std::string blockStem(Operation *nest) {
  tl::BlockOp last, lastWhole;
  nest->walk([&](tl::BlockOp b) {
    last = b;
    if (!b.getName().contains("_tail"))
      lastWhole = b;
  });
  if (lastWhole)
    last = lastWhole;
  StringRef name = last ? last.getName() : StringRef("nest");
  StringRef stem = name.rtrim("0123456789");
  if (stem.size() < name.size() && stem.ends_with("_"))
    name = stem.drop_back();
  return name.str();
}

/// The kernel's symbol: the caller's, then what the nest computes (its
/// blocks' stem; a fused launch's parts' distinct stems, in order, joined
/// by `_`).
static std::string kernelName(func::FuncOp parent, Operation *nest) {
  std::string name;
  auto loop = dyn_cast<tl::ForOp>(nest);
  if (auto parts = loop ? tl::fusedLaunchParts(loop) : std::nullopt) {
    SmallVector<std::string> stems;
    for (const tl::LaunchPart &p : *parts)
      if (std::string stem = blockStem(p.guard);
          !llvm::is_contained(stems, stem))
        stems.push_back(stem);
    name = llvm::join(stems, "_");
  } else {
    name = blockStem(nest);
  }
  return (parent.getName() + "." + name).str();
}

namespace {
/// Structural equality of two kernels: the same signature, bodies equal
/// over corresponding arguments.
bool equalKernels(tl::NestEquivalence &eq, func::FuncOp a, func::FuncOp b) {
  eq.reset();
  return a.getFunctionType() == b.getFunctionType() &&
         eq.equal(a.getBody(), b.getBody());
}

struct TLOutlineKernelsPass
    : tl::impl::TLOutlineKernelsBase<TLOutlineKernelsPass> {
  void runOnOperation() override;
};
} // namespace

/// A new kernel function, not yet in the module, that runs `nest` (an op at
/// the top level of a function) over its arguments; `operands` are what the
/// nest's caller passes it.
static func::FuncOp outline(Operation *nest, StringRef name,
                            SmallVectorImpl<Value> &operands) {
  // What the nest uses from outside, in order of first use (the same order
  // in every layer's copy of a kernel).
  llvm::SetVector<Value> captured;
  nest->walk<WalkOrder::PreOrder>([&](Operation *op) {
    for (Value v : op->getOperands())
      if (!nest->isAncestor(v.getParentRegion()->getParentOp()))
        captured.insert(v);
  });
  // Constants are cloned in, the rest are arguments.
  SmallVector<Value> constants;
  for (Value v : captured) {
    Operation *def = v.getDefiningOp();
    bool constant = def && def->hasTrait<OpTrait::ConstantLike>();
    (constant ? constants : operands).push_back(v);
  }

  MLIRContext *ctx = nest->getContext();
  Location loc = nest->getLoc();
  SmallVector<Type> argTypes = llvm::map_to_vector(
      operands, [](Value v) { return kernelArgType(v.getType()); });
  OpBuilder mb(ctx);
  auto kernel = func::FuncOp::create(mb, loc, name,
                                     FunctionType::get(ctx, argTypes, {}));
  kernel.setPrivate();
  kernel->setAttr(kKernelAttr, UnitAttr::get(ctx));
  // Called, never inlined back (LLVM's inliner would copy a kernel into
  // every layer's call: Qwen3-0.6B's host functions grew to 117K
  // instructions each, two thirds of the compile's time).
  kernel->setAttr("passthrough",
                  ArrayAttr::get(ctx, {StringAttr::get(ctx, "noinline")}));

  Block *entry = kernel.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  IRMapping map;
  for (Value c : constants)
    map.map(c, b.clone(*c.getDefiningOp())
                   ->getResult(cast<OpResult>(c).getResultNumber()));
  for (auto [v, arg] : llvm::zip(operands, entry->getArguments()))
    map.map(v, arg);
  b.clone(*nest, map);
  func::ReturnOp::create(b, loc);
  return kernel;
}

void TLOutlineKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> parents;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() && !f->hasAttr(kKernelAttr))
      parents.push_back(f);

  // Kernels so far, by hash: a nest equal to one of them calls it.
  tl::NestEquivalence eq;
  llvm::DenseMap<size_t, SmallVector<func::FuncOp>> kernels;
  llvm::StringMap<unsigned> uses;
  for (func::FuncOp parent : parents) {
    if (!parent.getBody().hasOneBlock()) {
      parent.emitError("tl-outline-kernels expects a single-block function "
                       "body");
      return signalPassFailure();
    }
    SmallVector<Operation *> nests;
    // (A band the GEMM library computes, kind library, stays: the host
    // calls the library, convert-tl-to-gpu.)
    for (Operation &op : parent.getBody().front()) {
      auto l = dyn_cast<tl::ForOp>(op);
      if ((l && l.getKind() != tl::LoopKind::library) || isa<tl::BlockOp>(op))
        nests.push_back(&op);
    }
    // New kernels follow their caller in the order it first calls them.
    func::FuncOp previous = parent;
    for (Operation *nest : nests) {
      std::string base = kernelName(parent, nest);
      SmallVector<Value> operands;
      func::FuncOp kernel = outline(nest, base, operands);
      SmallVector<func::FuncOp> &same =
          kernels[size_t(tl::NestEquivalence::hash(kernel))];
      auto it = llvm::find_if(
          same, [&](func::FuncOp k) { return equalKernels(eq, k, kernel); });
      if (it != same.end()) {
        kernel.erase();
        kernel = *it;
      } else {
        // base, base_1, base_2, ... in the order they appear.
        std::string name = base;
        for (unsigned &n = uses[base]; symbols.lookup(name);)
          name = base + "_" + std::to_string(++n);
        kernel.setName(name);
        symbols.insert(kernel, std::next(Block::iterator(previous)));
        previous = kernel;
        same.push_back(kernel);
      }
      OpBuilder b(nest);
      SmallVector<Value> args;
      for (auto [v, t] :
           llvm::zip(operands, kernel.getFunctionType().getInputs()))
        args.push_back(v.getType() == t ? v
                                        : memref::CastOp::create(
                                              b, nest->getLoc(), t, v)
                                              .getResult());
      func::CallOp::create(b, nest->getLoc(), kernel, args);
      nest->erase();
    }
  }
}
