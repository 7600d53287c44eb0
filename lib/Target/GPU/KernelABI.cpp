//===- KernelABI.cpp - the dispatch program, the kernels' shared ABI -----===//
//
// The dispatch program of a GPU artifact (docs/artifact.md, "device"), a
// list per phase (prefill, decode) of kernel launches whose grid, buffer
// bindings and scalar arguments are expressions of the call's sizes, written
// from the host functions' `gpu.launch_func`s, and the kernel signatures it
// describes:
// - a memref argument becomes a one-dimensional `memref<?xT>` bound at its
//   byte offset (a binding carries the offset and no shape), followed by
//   one index argument per dynamic size; the kernel's accesses are
//   linearized with the strides of the old type;
// - scalars stay;
// - each buffer binding says whether the kernel writes it ("writes"), so
//   that the runtime orders only launches whose bindings overlap where one
//   of them writes.
// The launches are then dropped from the host functions, which keep their
// attributes (the arena plans) for the artifact writer.
//
//===----------------------------------------------------------------------===//
#include "Target/GPU/KernelABI.h"
#include "Dialect/TL/IR/TL.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"

#include <functional>
#include <limits>

using namespace mlir;
using namespace llmc;
namespace json = llvm::json;

namespace {

/// Names of the entry's arguments (llmc/abi.h), by position.
const char *kArgNames[] = {"tokens", "pos0",   "weights", "kv",
                           "n_out",  "logits", "arena"};

/// Expressions over the call's sizes: an integer, a size name, or
/// [op, a, b].
json::Value binary(StringRef op, json::Value a, json::Value b) {
  auto ia = a.getAsInteger(), ib = b.getAsInteger();
  if (ia && ib) {
    if (op == "+")
      return *ia + *ib;
    if (op == "-")
      return *ia - *ib;
    if (op == "*")
      return *ia * *ib;
    if (op == "floordiv" && *ib > 0 && *ia >= 0)
      return *ia / *ib;
  }
  if ((op == "+" || op == "-") && ib == 0)
    return a;
  if (op == "+" && ia == 0)
    return b;
  if (op == "*" && (ib == 1 || ia == 1))
    return ib == 1 ? std::move(a) : std::move(b);
  if (op == "*" && (ia == 0 || ib == 0))
    return 0;
  return json::Array{op, std::move(a), std::move(b)};
}

/// A memref of the host traced to the entry argument it views.
struct Traced {
  std::string root;
  json::Value byteOffset = 0;
  SmallVector<json::Value> sizes;   // of this memref, per dimension
  SmallVector<json::Value> strides; // in elements, per dimension
};

class Extractor {
public:
  explicit Extractor(func::FuncOp host) : host(host) {}

  FailureOr<json::Value> expr(Value v);
  /// The expressions of several values (a view's sizes, a grid).
  FailureOr<SmallVector<json::Value>> exprs(ValueRange values);
  FailureOr<Traced> trace(Value v);

private:
  InFlightDiagnostic fail(Operation *op, const Twine &what) {
    return op->emitOpError("the dispatch program cannot express ") << what;
  }
  func::FuncOp host;
};

FailureOr<SmallVector<json::Value>> Extractor::exprs(ValueRange values) {
  SmallVector<json::Value> out;
  for (Value v : values) {
    FailureOr<json::Value> e = expr(v);
    if (failed(e))
      return failure();
    out.push_back(std::move(*e));
  }
  return out;
}

FailureOr<json::Value> Extractor::expr(Value v) {
  if (auto c = getConstantIntValue(v))
    return json::Value(*c);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner()->getParentOp() == host && arg.getType().isIndex() &&
        arg.getArgNumber() < std::size(kArgNames))
      return json::Value(kArgNames[arg.getArgNumber()]);
    return emitError(v.getLoc(), "the dispatch program cannot express this "
                                 "value (not an argument of the entry)"),
           failure();
  }
  Operation *def = v.getDefiningOp();
  if (auto dim = dyn_cast<memref::DimOp>(def)) {
    auto index = getConstantIntValue(dim.getIndex());
    FailureOr<Traced> t = trace(dim.getSource());
    if (!index || failed(t))
      return fail(def, "this size"), failure();
    return t->sizes[*index];
  }
  if (auto load = dyn_cast<memref::LoadOp>(def)) {
    // A token id (decode's embedding row): read by the runtime.
    auto arg = dyn_cast<BlockArgument>(load.getMemRef());
    if (arg && arg.getOwner()->getParentOp() == host &&
        arg.getArgNumber() == 0 && load.getIndices().size() == 1) {
      FailureOr<json::Value> i = expr(load.getIndices()[0]);
      if (failed(i))
        return failure();
      return json::Value(json::Array{"token", std::move(*i)});
    }
    return fail(def, "a value loaded from memory other than a token"),
           failure();
  }
  if (auto cast = dyn_cast<arith::IndexCastOp>(def))
    return expr(cast.getIn());
  if (auto cast = dyn_cast<arith::IndexCastUIOp>(def))
    return expr(cast.getIn());
  StringRef op =
      llvm::TypeSwitch<Operation *, StringRef>(def)
          .Case<arith::AddIOp>([](auto) { return "+"; })
          .Case<arith::SubIOp>([](auto) { return "-"; })
          .Case<arith::MulIOp>([](auto) { return "*"; })
          // Truncating signed division and remainder differ from
          // floordiv and mod on negatives: refused.
          .Case<arith::DivUIOp, arith::FloorDivSIOp>(
              [](auto) { return "floordiv"; })
          .Case<arith::CeilDivUIOp, arith::CeilDivSIOp>(
              [](auto) { return "ceildiv"; })
          .Case<arith::RemUIOp>([](auto) { return "mod"; })
          .Case<arith::MinUIOp, arith::MinSIOp>([](auto) { return "min"; })
          .Case<arith::MaxUIOp, arith::MaxSIOp>([](auto) { return "max"; })
          .Default([](auto) { return ""; });
  if (op.empty() || def->getNumOperands() != 2)
    return fail(def, "this operation"), failure();
  FailureOr<json::Value> a = expr(def->getOperand(0));
  if (failed(a))
    return failure();
  FailureOr<json::Value> b = expr(def->getOperand(1));
  if (failed(b))
    return failure();
  return binary(op, std::move(*a), std::move(*b));
}

/// The sizes and strides of a memref type, dynamic ones from `dynSizes`
/// (identity layouts) or refused.
static LogicalResult shapeOf(MemRefType type, ArrayRef<json::Value> dynSizes,
                             Traced &t, Operation *at) {
  unsigned next = 0;
  t.sizes.clear();
  for (int64_t s : type.getShape())
    t.sizes.push_back(ShapedType::isDynamic(s) ? dynSizes[next++]
                                               : json::Value(s));
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return at->emitOpError("has a layout without strides");
  t.strides.clear();
  // Dynamic strides of an identity layout are products of sizes.
  json::Value running = 1;
  SmallVector<json::Value> identity(type.getRank(), json::Value(1));
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    identity[d] = running;
    running = binary("*", running, t.sizes[d]);
  }
  for (auto [d, s] : llvm::enumerate(strides)) {
    if (!ShapedType::isDynamic(s)) {
      t.strides.push_back(s);
      continue;
    }
    if (!type.getLayout().isIdentity())
      return at->emitOpError("has a dynamic stride the dispatch program "
                             "cannot express");
    t.strides.push_back(identity[d]);
  }
  return success();
}

FailureOr<Traced> Extractor::trace(Value v) {
  auto type = cast<MemRefType>(v.getType());
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner()->getParentOp() != host ||
        arg.getArgNumber() >= std::size(kArgNames))
      return emitError(v.getLoc(), "a kernel's buffer is not a view of the "
                                   "entry's buffers"),
             failure();
    Traced t;
    t.root = kArgNames[arg.getArgNumber()];
    // The entry buffers' dynamic sizes (llmc/abi.h): the tokens, the rows
    // of logits, the bytes of the weights and of the arena.
    SmallVector<json::Value> dyn;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d)) {
        if (d != 0 || t.root == "kv")
          return emitError(v.getLoc(), "an entry buffer of unexpected shape"),
                 failure();
        dyn.push_back(json::Value(t.root == "tokens"    ? "tokens"
                                  : t.root == "logits"  ? "n_out"
                                  : t.root == "weights" ? "weights_bytes"
                                                        : "arena_bytes"));
      }
    if (failed(shapeOf(type, dyn, t, host)))
      return failure();
    return t;
  }
  Operation *def = v.getDefiningOp();
  int64_t elemBytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  if (auto view = dyn_cast<memref::ViewOp>(def)) {
    FailureOr<Traced> src = trace(view.getSource());
    FailureOr<json::Value> shift = expr(view.getByteShift());
    if (failed(src) || failed(shift))
      return failure();
    FailureOr<SmallVector<json::Value>> dyn = exprs(view.getSizes());
    if (failed(dyn))
      return failure();
    Traced t;
    t.root = src->root;
    t.byteOffset = binary("+", src->byteOffset, std::move(*shift));
    if (failed(shapeOf(type, *dyn, t, def)))
      return failure();
    return t;
  }
  if (auto sub = dyn_cast<memref::SubViewOp>(def)) {
    FailureOr<Traced> src = trace(sub.getSource());
    if (failed(src))
      return failure();
    Traced t;
    t.root = src->root;
    json::Value elems = 0;
    for (auto [i, off] : llvm::enumerate(sub.getMixedOffsets())) {
      json::Value o = 0;
      if (auto c = getConstantIntValue(off)) {
        o = *c;
      } else {
        FailureOr<json::Value> e = expr(cast<Value>(off));
        if (failed(e))
          return failure();
        o = std::move(*e);
      }
      elems = binary("+", elems, binary("*", std::move(o), src->strides[i]));
    }
    t.byteOffset =
        binary("+", src->byteOffset, binary("*", std::move(elems), elemBytes));
    FailureOr<SmallVector<json::Value>> dyn = exprs(sub.getSizes());
    if (failed(dyn) || failed(shapeOf(type, *dyn, t, def)))
      return failure();
    // The subview's strides: the source's times its own (unit here).
    for (auto [i, s] : llvm::enumerate(sub.getStaticStrides()))
      if (s != 1)
        return fail(def, "a strided subview"), failure();
    for (size_t i = 0, r = 0; i < src->strides.size(); ++i) {
      if (sub.getDroppedDims().test(i))
        continue;
      t.strides[r++] = src->strides[i];
    }
    return t;
  }
  if (auto c = dyn_cast<memref::CastOp>(def)) {
    FailureOr<Traced> src = trace(c.getSource());
    if (failed(src))
      return failure();
    return src;
  }
  return fail(def, "this buffer"), failure();
}

/// The bytes a memref spans from its offset: (sum (size - 1) * stride + 1)
/// * element bytes.
static json::Value spanBytes(const Traced &t, int64_t elemBytes) {
  json::Value last = 0;
  for (auto [s, st] : llvm::zip(t.sizes, t.strides))
    last = binary("+", last, binary("*", binary("-", s, 1), st));
  return binary("*", binary("+", last, 1), elemBytes);
}

/// The bytes a memref of a static shape and layout spans from its offset,
/// or nullopt.
static std::optional<int64_t> staticSpan(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type.hasStaticShape() ||
      failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  int64_t last = 0;
  for (auto [s, st] : llvm::zip(type.getShape(), strides))
    last += (s - 1) * st;
  return (last + 1) * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// Every Vulkan device's largest minStorageBufferOffsetAlignment (and a
/// CUDA pointer's widest access's alignment): a window's offset past its
/// buffer's is a multiple of it.
constexpr int64_t kWindowAlignment = 256;

/// The windows a buffer argument of `type` is bound through: one, or where
/// its span (static) is past the target's range, consecutive windows of
/// `bytes` each (the range rounded down to kWindowAlignment), the last
/// shorter.
struct Windows {
  int64_t count = 1, bytes = 0, span = 0;
};
static Windows windowsOf(MemRefType type, const TargetDescription &target) {
  Windows w;
  std::optional<int64_t> span = staticSpan(type);
  int64_t bytes = target.maxBufferRange / kWindowAlignment * kWindowAlignment;
  int64_t elemBytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  // (A kernel's indices are 32-bit: a buffer of more elements keeps the
  // range error.)
  if (!span || *span <= target.maxBufferRange || bytes <= 0 ||
      *span / elemBytes > std::numeric_limits<int32_t>::max())
    return w;
  w.bytes = bytes;
  w.span = *span;
  w.count = (*span + bytes - 1) / bytes;
  return w;
}

} // namespace

/// The kernel's new signature and body: memref arguments one-dimensional
/// (followed by their dynamic sizes), accesses linearized. An argument past
/// the target's range (a weight matrix larger than what one binding may
/// span: Qwen3-0.6B's 311 MB embedding on a device of 128 MB) becomes one
/// argument per window (windowsOf), each load of it reading the window its
/// element lies in (a branch per window; the kernels that read such a
/// buffer read it along rows, so a workgroup's threads take the same one).
static LogicalResult linearizeArguments(gpu::GPUFuncOp kernel,
                                        const TargetDescription &target) {
  MLIRContext *ctx = kernel.getContext();
  OpBuilder b(ctx);
  Block &entry = kernel.getBody().front();
  // The inputs; the workgroup's memory (attributions) follows them.
  unsigned oldCount = kernel.getNumArguments();
  SmallVector<Type> newTypes;
  // The new inputs go before the attributions (gpu.func's order), which
  // follow the old inputs until those are erased.
  unsigned insertAt = oldCount;
  auto addInput = [&](Type t, Location l) {
    newTypes.push_back(t);
    return entry.insertArgument(insertAt++, t, l);
  };
  for (unsigned i = 0; i < oldCount; ++i) {
    BlockArgument arg = entry.getArgument(i);
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type) {
      arg.replaceAllUsesWith(addInput(arg.getType(), arg.getLoc()));
      continue;
    }
    auto flatType =
        MemRefType::get({ShapedType::kDynamic}, type.getElementType());
    Location loc = arg.getLoc();
    Windows windows = windowsOf(type, target);
    SmallVector<Value> flats;
    for (int64_t w = 0; w < windows.count; ++w) {
      flats.push_back(addInput(flatType, loc));
    }
    Value flat = flats.front();
    int64_t elemBytes = std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
    if (windows.count > 1 && windows.bytes % elemBytes)
      return kernel.emitOpError("argument ")
             << i << " spans " << windows.span
             << " bytes, past the target's range, and its elements do not "
                "divide a window of "
             << windows.bytes;
    // A load through the windows: window at / elements a window, the
    // element at / ... within it.
    auto windowedLoad = [&](OpBuilder &ob, Location l, Value at) -> Value {
      Value per =
          arith::ConstantIndexOp::create(ob, l, windows.bytes / elemBytes);
      Value which = arith::DivUIOp::create(ob, l, at, per);
      Value within = arith::RemUIOp::create(ob, l, at, per);
      std::function<Value(OpBuilder &, int64_t)> pick = [&](OpBuilder &pb,
                                                            int64_t w) {
        if (w + 1 == windows.count)
          return memref::LoadOp::create(pb, l, flats[w], within).getResult();
        Value is =
            arith::CmpIOp::create(pb, l, arith::CmpIPredicate::eq, which,
                                  arith::ConstantIndexOp::create(pb, l, w));
        auto branch = scf::IfOp::create(
            pb, l, is,
            [&](OpBuilder &tb, Location tl) {
              scf::YieldOp::create(
                  tb, tl,
                  memref::LoadOp::create(tb, tl, flats[w], within).getResult());
            },
            [&](OpBuilder &eb, Location el) {
              scf::YieldOp::create(eb, el, pick(eb, w + 1));
            });
        return branch.getResult(0);
      };
      return pick(ob, 0);
    };
    // The sizes: constants or new arguments.
    SmallVector<Value> sizes;
    b.setInsertionPointToStart(&entry);
    for (int64_t s : type.getShape()) {
      if (ShapedType::isDynamic(s)) {
        sizes.push_back(addInput(b.getIndexType(), loc));
      } else {
        sizes.push_back(arith::ConstantIndexOp::create(b, loc, s));
      }
    }
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)))
      return kernel.emitOpError("argument ") << i << " has no strides";
    SmallVector<Value> strideValues(type.getRank());
    Value running = arith::ConstantIndexOp::create(b, loc, 1);
    if (!type.getLayout().isIdentity() &&
        llvm::any_of(strides, ShapedType::isDynamic))
      return kernel.emitOpError("argument ")
             << i << " has a dynamic stride, which a binding cannot carry";
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      strideValues[d] =
          ShapedType::isDynamic(strides[d])
              ? running
              : arith::ConstantIndexOp::create(b, loc, strides[d]).getResult();
      running = arith::MulIOp::create(b, loc, running, sizes[d]);
    }
    auto linear = [&](OpBuilder &ob, Location l, ValueRange indices) {
      Value sum = arith::ConstantIndexOp::create(ob, l, 0);
      for (auto [idx, st] : llvm::zip(indices, strideValues))
        sum = arith::AddIOp::create(ob, l, sum,
                                    arith::MulIOp::create(ob, l, idx, st));
      return sum;
    };
    for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
      Operation *user = use.getOwner();
      OpBuilder ub(user);
      if (auto load = dyn_cast<memref::LoadOp>(user)) {
        Value at = linear(ub, load.getLoc(), load.getIndices());
        load.getResult().replaceAllUsesWith(
            windows.count > 1
                ? windowedLoad(ub, load.getLoc(), at)
                : memref::LoadOp::create(ub, load.getLoc(), flat, at)
                      .getResult());
        load.erase();
      } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
        if (windows.count > 1)
          return store.emitOpError("writes a buffer of ")
                 << windows.span << " bytes, past the target's range of "
                 << target.maxBufferRange
                 << " (only a buffer the kernel reads is bound in windows)";
        Value at = linear(ub, store.getLoc(), store.getIndices());
        memref::StoreOp::create(ub, store.getLoc(), store.getValue(), flat, at);
        store.erase();
      } else if (isa<vector::LoadOp, vector::StoreOp>(user)) {
        // A lane's consecutive elements (a vectorized loop): the first
        // one's offset, the alignment kept.
        if (!target.gpuLoadBytes)
          return user->emitOpError("a vector access, which this target's "
                                   "kernels do not lower (CUDA's do)");
        if (windows.count > 1)
          return user->emitOpError("a vector access of a buffer bound in "
                                   "windows (past the target's range)");
        if (auto vload = dyn_cast<vector::LoadOp>(user)) {
          Value at = linear(ub, vload.getLoc(), vload.getIndices());
          auto flatLoad = vector::LoadOp::create(
              ub, vload.getLoc(), vload.getVectorType(), flat, ValueRange{at},
              vload.getNontemporal(), vload.getAlignmentAttr());
          vload.getResult().replaceAllUsesWith(flatLoad.getResult());
          vload.erase();
        } else {
          auto vstore = cast<vector::StoreOp>(user);
          Value at = linear(ub, vstore.getLoc(), vstore.getIndices());
          vector::StoreOp::create(ub, vstore.getLoc(), vstore.getValueToStore(),
                                  flat, ValueRange{at}, vstore.getNontemporal(),
                                  vstore.getAlignmentAttr());
          vstore.erase();
        }
      } else if (auto mload = dyn_cast<gpu::SubgroupMmaLoadMatrixOp>(user)) {
        // A matrix band's fragment: its first element's offset, the rows'
        // stride (the leading dimension) unchanged.
        if (windows.count > 1)
          return mload.emitOpError("reads a fragment of a buffer bound in "
                                   "windows (past the target's range)");
        Value at = linear(ub, mload.getLoc(), mload.getIndices());
        auto flatLoad = gpu::SubgroupMmaLoadMatrixOp::create(
            ub, mload.getLoc(), mload.getType(), flat, ValueRange{at},
            mload.getLeadDimensionAttr(), mload.getTransposeAttr());
        mload.getResult().replaceAllUsesWith(flatLoad.getResult());
        mload.erase();
      } else if (auto mstore = dyn_cast<gpu::SubgroupMmaStoreMatrixOp>(user)) {
        if (windows.count > 1)
          return mstore.emitOpError("writes a buffer of ")
                 << windows.span << " bytes, past the target's range of "
                 << target.maxBufferRange;
        Value at = linear(ub, mstore.getLoc(), mstore.getIndices());
        gpu::SubgroupMmaStoreMatrixOp::create(
            ub, mstore.getLoc(), mstore.getSrc(), flat, ValueRange{at},
            mstore.getLeadDimensionAttr(), mstore.getTransposeAttr());
        mstore.erase();
      } else if (auto dim = dyn_cast<memref::DimOp>(user)) {
        auto d = getConstantIntValue(dim.getIndex());
        if (!d)
          return dim.emitOpError("a kernel reads a size it cannot name");
        dim.getResult().replaceAllUsesWith(sizes[*d]);
        dim.erase();
      } else {
        return user->emitOpError("uses a kernel's buffer in a way the kernel "
                                 "ABI cannot linearize");
      }
    }
  }
  entry.eraseArguments(0, oldCount);
  kernel.setFunctionType(FunctionType::get(ctx, newTypes, {}));
  return success();
}

/// For each argument of `kernel`, whether it may write the memory that
/// argument points to: a write effect on a value that is the argument or a
/// view of it. A write to memory of the kernel's own (a stack buffer, a
/// workgroup attribution) writes no argument; any other write whose memory
/// cannot be traced (a value chosen at run time, a write without a value)
/// may write every argument.
static SmallVector<bool> writtenArgs(gpu::GPUFuncOp kernel) {
  unsigned n = kernel.getNumArguments();
  SmallVector<bool> written(n, false);
  Block *entry = &kernel.front();
  // The argument `v` points into (its index), memory of the kernel's own
  // (n), or unknown (none).
  auto rootOf = [&](Value v) -> std::optional<unsigned> {
    while (true) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() != entry)
          return std::nullopt;
        // Past the arguments: workgroup attributions, the kernel's own.
        return std::min(arg.getArgNumber(), n);
      }
      Operation *def = v.getDefiningOp();
      if (isa_and_nonnull<memref::AllocaOp, memref::AllocOp>(def))
        return n;
      if (auto view = dyn_cast_or_null<ViewLikeOpInterface>(def)) {
        v = view.getViewSource();
        continue;
      }
      if (auto cast = dyn_cast_or_null<memref::CastOp>(def)) {
        v = cast.getSource();
        continue;
      }
      return std::nullopt;
    }
  };
  auto write = [&](Value v) {
    std::optional<unsigned> root = rootOf(v);
    if (!root)
      written.assign(n, true);
    else if (*root < n)
      written[*root] = true;
  };
  kernel.walk([&](Operation *op) {
    // A fragment store writes its destination only (the op declares a
    // write of no particular value besides).
    if (auto st = dyn_cast<gpu::SubgroupMmaStoreMatrixOp>(op)) {
      write(st.getDstMemref());
      return;
    }
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface) {
      // Unknown effects (a call, an op without the interface that touches
      // memory): any memref it is given may be written.
      if (!isPure(op) && op->getNumRegions() == 0)
        for (Value v : op->getOperands())
          if (isa<MemRefType>(v.getType()))
            write(v);
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (auto &e : effects) {
      if (!isa<MemoryEffects::Write>(e.getEffect()))
        continue;
      Value v = e.getValue();
      if (!v) {
        if (isa<SideEffects::AutomaticAllocationScopeResource>(
                e.getResource()) ||
            e.getResource() != SideEffects::DefaultResource::get())
          continue; // a stack buffer, a barrier's workgroup memory
        written.assign(n, true);
        continue;
      }
      write(v);
    }
  });
  return written;
}

LogicalResult gpu_abi::checkKernelTypes(gpu::GPUFuncOp kernel,
                                        const TargetDescription &target) {
  std::string kind =
      llvm::StringRef(target.str()).split(':').first.split(',').first.str();
  auto missing = [&](Type t) -> const char * {
    if (auto shaped = dyn_cast<ShapedType>(t))
      t = shaped.getElementType();
    if (t.isF64() && !target.hasGPUFloat64())
      return "fp64";
    if (t.isF16() && !target.hasGPUFloat16())
      return "fp16";
    if (t.isInteger(8) && !target.hasGPUInt8())
      return "int8";
    if (t.isInteger(64) && !target.hasGPUInt64())
      return "int64";
    return nullptr;
  };
  // Its workgroup memory within the target's (a schedule that stages or
  // fuses more than a workgroup holds).
  int64_t shared = 0;
  for (BlockArgument a : kernel.getWorkgroupAttributions()) {
    auto t = cast<MemRefType>(a.getType());
    shared += t.getNumElements() *
              std::max<int64_t>(t.getElementTypeBitWidth() / 8, 1);
  }
  if (shared > target.sharedMemory)
    return kernel.emitOpError("needs ")
           << shared << " bytes of workgroup memory; the target's workgroups "
           << "have " << target.sharedMemory
           << " (shared=; a schedule that stages or fuses less)";
  for (BlockArgument a : kernel.getArguments())
    if (const char *f = missing(a.getType()))
      return kernel.emitOpError("takes a buffer of ")
             << a.getType() << ", which needs the target feature " << f
             << " (compile for a device that has it: --target " << kind << ",+"
             << f << ", or the device's own description)";
  WalkResult r = kernel.walk([&](Operation *op) {
    for (Type t :
         llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
      if (const char *f = missing(t)) {
        op->emitOpError("computes with ")
            << t << ", which needs the target feature " << f
            << " (compile for a device that has it: --target " << kind << ",+"
            << f << ", or the device's own description)";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}
/// The steps of the GEMM library's product `gemm` (docs/artifact.md,
/// "gemm"): where its sums start at another buffer's values, a copy of them
/// into out (both of contiguous rows), then the product.
static LogicalResult gemmSteps(tl::LibraryGemmOp gemm, Extractor &ex,
                               const TargetDescription &target,
                               json::Array &steps) {
  if (!target.hasGemmLibrary())
    return gemm.emitOpError("calls the GEMM library, which target ")
           << target.str() << " has not (cuBLAS: a CUDA target with +cublas)";
  auto matrix = [&](Value v) -> FailureOr<std::pair<Traced, json::Object>> {
    FailureOr<Traced> t = ex.trace(v);
    if (failed(t))
      return failure();
    int64_t elemBytes =
        cast<MemRefType>(v.getType()).getElementTypeBitWidth() / 8;
    json::Object binding{{"buffer", t->root},
                         {"offset", t->byteOffset},
                         {"bytes", spanBytes(*t, elemBytes)}};
    return std::pair(std::move(*t), std::move(binding));
  };
  auto a = matrix(gemm.getA()), b = matrix(gemm.getB()),
       out = matrix(gemm.getOut());
  if (failed(a) || failed(b) || failed(out))
    return failure();
  if (Value init = gemm.getInit()) {
    auto from = matrix(init);
    if (failed(from))
      return failure();
    // A copy of whole rows: both row strides the row's length.
    auto contiguous = [](const Traced &t) {
      return t.strides[0] == t.sizes[1] && t.strides[1] == 1;
    };
    if (!contiguous(from->first) || !contiguous(out->first))
      return gemm.emitOpError("starts from a buffer the dispatch program "
                              "cannot copy into out (rows not contiguous)");
    steps.push_back(json::Object{
        {"copy",
         json::Object{{"src", json::Object{{"buffer", from->first.root},
                                           {"offset", from->first.byteOffset}}},
                      {"dst", json::Object{{"buffer", out->first.root},
                                           {"offset", out->first.byteOffset}}},
                      {"bytes", from->second["bytes"]}}}});
  }
  steps.push_back(json::Object{
      {"gemm", json::Object{{"a", std::move(a->second)},
                            {"b", std::move(b->second)},
                            {"out", std::move(out->second)},
                            {"m", a->first.sizes[0]},
                            {"n", b->first.sizes[0]},
                            {"k", a->first.sizes[1]},
                            {"lda", a->first.strides[0]},
                            {"ldb", b->first.strides[0]},
                            {"ldc", out->first.strides[0]},
                            {"alpha", gemm.getAlpha().convertToDouble()},
                            {"beta", gemm.getBeta().convertToDouble()},
                            {"type", "f16"}}}});
  return success();
}

LogicalResult gpu_abi::writeDispatchProgram(ModuleOp module,
                                            const TargetDescription &target,
                                            StringRef pass,
                                            RetypeKernel retype) {
  auto gpuModule = module.lookupSymbol<gpu::GPUModuleOp>("llmc_kernels");
  if (!gpuModule)
    return module.emitError(pass)
           << ": no gpu.module @llmc_kernels (run convert-tl-to-gpu first)";
  // The kernels' order in the program: as the module lists them.
  SmallVector<gpu::GPUFuncOp> kernels;
  DenseMap<StringAttr, int64_t> index;
  SmallVector<SmallVector<bool>> writes;
  for (auto k : gpuModule.getOps<gpu::GPUFuncOp>()) {
    index[k.getNameAttr()] = kernels.size();
    kernels.push_back(k);
    writes.push_back(writtenArgs(k));
  }
  json::Object program;
  json::Array kernelList;
  for (gpu::GPUFuncOp k : kernels) {
    DenseI32ArrayAttr block = k.getKnownBlockSizeAttr();
    json::Array wg;
    for (int i = 0; i < 3; ++i)
      wg.push_back(block ? int64_t(block[i]) : int64_t(1));
    json::Object entry{{"name", k.getName()}, {"workgroup", std::move(wg)}};
    // A kernel whose lanes combine values across a subgroup needs the
    // device's subgroups to be the size it was scheduled for.
    if (k.walk([](Operation *op) {
           return isa<gpu::SubgroupReduceOp, gpu::SubgroupMmaComputeOp>(op)
                      ? WalkResult::interrupt()
                      : WalkResult::advance();
         }).wasInterrupted())
      entry["subgroup"] = int64_t(target.subgroupSize);
    kernelList.push_back(std::move(entry));
  }
  json::Object phases;
  for (auto host : module.getOps<func::FuncOp>()) {
    auto phase = host->getAttrOfType<StringAttr>("llmc.phase");
    if (!phase)
      continue;
    Extractor ex(host);
    json::Array launches;
    // The host's effects in order: launches, copies between buffers and
    // the GEMM library's products; anything else that writes memory has no
    // place in the program.
    SmallVector<Operation *> ops;
    WalkResult scan = host.walk([&](Operation *op) {
      if (isa<gpu::LaunchFuncOp, memref::CopyOp, tl::LibraryGemmOp>(op)) {
        ops.push_back(op);
        return WalkResult::advance();
      }
      if (op == host.getOperation() || isa<func::ReturnOp>(op) || isPure(op) ||
          isa<memref::LoadOp>(op))
        return WalkResult::advance();
      op->emitOpError("is a host operation the dispatch program cannot "
                      "express (only kernel launches, copies and the GEMM "
                      "library's products)");
      return WalkResult::interrupt();
    });
    if (scan.wasInterrupted())
      return failure();
    for (Operation *op : ops) {
      if (auto gemm = dyn_cast<tl::LibraryGemmOp>(op)) {
        if (failed(gemmSteps(gemm, ex, target, launches)))
          return failure();
        gemm.erase();
        continue;
      }
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        auto srcType = cast<MemRefType>(copy.getSource().getType());
        auto dstType = cast<MemRefType>(copy.getTarget().getType());
        FailureOr<Traced> src = ex.trace(copy.getSource());
        FailureOr<Traced> dst = ex.trace(copy.getTarget());
        if (failed(src) || failed(dst))
          return failure();
        if (!srcType.getLayout().isIdentity() ||
            !dstType.getLayout().isIdentity()) {
          copy.emitOpError("copies a strided buffer, which the dispatch "
                           "program cannot express");
          return failure();
        }
        int64_t elemBytes =
            std::max<int64_t>(1, srcType.getElementTypeBitWidth() / 8);
        launches.push_back(json::Object{
            {"copy",
             json::Object{{"src", json::Object{{"buffer", src->root},
                                               {"offset", src->byteOffset}}},
                          {"dst", json::Object{{"buffer", dst->root},
                                               {"offset", dst->byteOffset}}},
                          {"bytes", spanBytes(*src, elemBytes)}}}});
        copy.erase();
        continue;
      }
      auto l = cast<gpu::LaunchFuncOp>(op);
      auto it = index.find(l.getKernelName());
      if (it == index.end()) {
        l.emitOpError("launches a kernel outside @llmc_kernels");
        return failure();
      }
      gpu::KernelDim3 g = l.getGridSizeOperandValues();
      FailureOr<SmallVector<json::Value>> gridSizes = ex.exprs({g.x, g.y, g.z});
      if (failed(gridSizes))
        return failure();
      json::Array grid(std::move(*gridSizes));
      json::Array args;
      for (auto [operand, v] : llvm::enumerate(l.getKernelOperands())) {
        auto type = dyn_cast<MemRefType>(v.getType());
        if (!type) {
          // Scalars are 32-bit in the kernels (index lowers to i32).
          if (!v.getType().isIndex() && !v.getType().isInteger(32)) {
            l.emitOpError("passes a scalar of type ")
                << v.getType() << ", which the dispatch program cannot "
                << "hold (index or i32)";
            return failure();
          }
          FailureOr<json::Value> e = ex.expr(v);
          if (failed(e))
            return failure();
          args.push_back(json::Object{{"scalar", std::move(*e)}});
          continue;
        }
        FailureOr<Traced> t = ex.trace(v);
        if (failed(t))
          return failure();
        int64_t elemBytes =
            std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
        json::Value bytes = spanBytes(*t, elemBytes);
        const SmallVector<bool> &w = writes[it->second];
        bool written = operand >= w.size() || w[operand];
        // Past the target's range: a binding per window (windowsOf, as
        // the kernel takes them).
        Windows windows = windowsOf(type, target);
        if (windows.count > 1) {
          for (int64_t k = 0; k < windows.count; ++k)
            args.push_back(json::Object{
                {"buffer", t->root},
                {"offset", binary("+", t->byteOffset, k * windows.bytes)},
                {"bytes",
                 std::min(windows.bytes, windows.span - k * windows.bytes)},
                {"writes", written}});
          continue;
        }
        if (std::optional<int64_t> n = bytes.getAsInteger();
            n && *n > target.maxBufferRange) {
          l.emitOpError("binds ") << *n << " bytes of the " << t->root
                                  << " buffer; the target binds at most "
                                  << target.maxBufferRange << " (its range=)";
          return failure();
        }
        args.push_back(json::Object{{"buffer", t->root},
                                    {"offset", std::move(t->byteOffset)},
                                    {"bytes", std::move(bytes)},
                                    {"writes", written}});
        for (auto [d, s] : llvm::enumerate(t->sizes))
          if (type.isDynamicDim(d))
            args.push_back(json::Object{{"scalar", s}});
      }
      launches.push_back(json::Object{{"kernel", it->second},
                                      {"grid", std::move(grid)},
                                      {"args", std::move(args)}});
      l.erase();
    }
    phases[phase.getValue()] = std::move(launches);
  }
  program["kernels"] = std::move(kernelList);
  program["phases"] = std::move(phases);
  for (gpu::GPUFuncOp k : kernels)
    if (failed(linearizeArguments(k, target)) || failed(retype(k)))
      return failure();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(program));
  module->setAttr("llmc.dispatch", StringAttr::get(module.getContext(), text));
  return success();
}
