//===- LowerCollectives.cpp - collectives through the runtime's table -----===//
//
// See the pass description (Passes.td). The table pointer lives in an
// internal global that the exported setter fills; each collective loads its
// function from the table and calls it with the table's context.
//
//===----------------------------------------------------------------------===//
#include "Target/CPU/Passes.h"

#include "Dialect/Dist/IR/Dist.h"
#include "llmc/abi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstddef>

namespace llmc::cpu {
#define GEN_PASS_DEF_CPULOWERCOLLECTIVES
#include "Target/CPU/Passes.h.inc"
} // namespace llmc::cpu

using namespace mlir;
using namespace llmc;

namespace {

constexpr StringLiteral kTableGlobal = "__llmc_collectives";

/// The table's fields, in llmc_collectives' order.
enum Field : int32_t {
  kContext = 0,
  kAllReduce,
  kAllGather,
  kPosition,
  kSend,
  kRecv,
  kFields
};
static_assert(offsetof(llmc_collectives, all_reduce) == sizeof(void *) &&
                  offsetof(llmc_collectives, all_gather) ==
                      2 * sizeof(void *) &&
                  offsetof(llmc_collectives, position) == 3 * sizeof(void *) &&
                  offsetof(llmc_collectives, send) == 4 * sizeof(void *) &&
                  offsetof(llmc_collectives, recv) == 5 * sizeof(void *) &&
                  sizeof(llmc_collectives) == kFields * sizeof(void *),
              "llmc_collectives is six pointers, in this order");

class Lowering {
public:
  explicit Lowering(ModuleOp module)
      : module(module), ctx(module.getContext()),
        ptr(LLVM::LLVMPointerType::get(ctx)),
        table(LLVM::LLVMStructType::getLiteral(
            ctx, SmallVector<Type>(kFields, ptr))) {}

  LogicalResult run() {
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<dist::BufferAllReduceOp, dist::BufferAllGatherOp,
              dist::BufferSendOp, dist::BufferRecvOp, dist::AxisIndexOp>(op))
        ops.push_back(op);
    });
    WalkResult left = module.walk([&](Operation *op) {
      if (isa<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
              dist::AllToAllOp, dist::SendOp, dist::RecvOp, dist::ShardOp>(
              op)) {
        op->emitOpError("is not lowered on the CPU: collectives on tensors "
                        "become their buffer forms in convert-graph-to-tl");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      return failure();
    // The mesh goes to the module's attributes (the artifact's metadata);
    // the op, which the calls below read, goes once they are made.
    for (auto op : module.getOps<dist::MeshOp>()) {
      if (module->hasAttr("dist.mesh"))
        return op.emitOpError("is a second mesh; a model runs on one");
      mesh = op;
      Builder b(ctx);
      module->setAttr(
          "dist.mesh",
          b.getDictionaryAttr({b.getNamedAttr("axes", op.getAxes()),
                               b.getNamedAttr("shape", b.getDenseI64ArrayAttr(
                                                           op.getShape()))}));
    }
    llvm::scope_exit eraseMesh([&] {
      if (mesh)
        mesh.erase();
    });
    if (ops.empty())
      return success();
    if (module.lookupSymbol(LLMC_SET_COLLECTIVES_SYMBOL) ||
        module.lookupSymbol(kTableGlobal))
      return module.emitError("the module already defines ")
             << LLMC_SET_COLLECTIVES_SYMBOL << " or " << kTableGlobal;
    addTableAndSetter();
    // The groups in a canonical order (by the positions of their axes in
    // the mesh): a pipeline's stages are libraries of their own, and every
    // rank must make the runtime's groups in the same order.
    for (Operation *op : ops) {
      auto axes = op->getAttrOfType<ArrayAttr>("axes");
      if (axes && !llvm::is_contained(groups, axes))
        groups.push_back(axes);
    }
    auto key = [&](ArrayAttr axes) {
      SmallVector<int64_t> k;
      for (StringRef a : axes.getAsValueRange<StringAttr>())
        k.push_back(mesh.getAxisIndex(a));
      return k;
    };
    // (Distinct groups have distinct keys: a plain sort is stable enough.)
    llvm::sort(groups,
               [&](ArrayAttr a, ArrayAttr b) { return key(a) < key(b); });
    for (Operation *op : ops) {
      ImplicitLocOpBuilder b(op->getLoc(), op);
      LogicalResult done =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](dist::BufferAllReduceOp o) { return allReduce(b, o); })
              .Case([&](dist::BufferAllGatherOp o) { return allGather(b, o); })
              .Case([&](dist::AxisIndexOp o) { return position(b, o); })
              .Case([&](dist::BufferSendOp o) {
                return pointToPoint(b, o, kSend, o.getBuffer(), o.getAxes(),
                                    o.getPeer());
              })
              .Case([&](dist::BufferRecvOp o) {
                return pointToPoint(b, o, kRecv, o.getBuffer(), o.getAxes(),
                                    o.getPeer());
              });
      if (failed(done))
        return failure();
    }
    SmallVector<Attribute> names;
    for (ArrayAttr g : groups)
      names.push_back(g);
    module->setAttr("dist.groups", ArrayAttr::get(ctx, names));
    return success();
  }

private:
  ModuleOp module;
  MLIRContext *ctx;
  Type ptr;
  LLVM::LLVMStructType table;
  SmallVector<ArrayAttr> groups;

  /// `@__llmc_collectives` (the table's address, null until set) and the
  /// exported `llmc_set_collectives(table)`.
  void addTableAndSetter() {
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = module.getLoc();
    LLVM::GlobalOp::create(b, loc, ptr, /*isConstant=*/false,
                           LLVM::Linkage::Internal, kTableGlobal,
                           /*value=*/Attribute());
    // (The global's initializer: null.)
    auto global = module.lookupSymbol<LLVM::GlobalOp>(kTableGlobal);
    Block *init = b.createBlock(&global.getInitializerRegion());
    b.setInsertionPointToStart(init);
    LLVM::ReturnOp::create(b, loc, LLVM::ZeroOp::create(b, loc, ptr));
    b.setInsertionPointToEnd(module.getBody());
    auto setter = LLVM::LLVMFuncOp::create(
        b, loc, LLMC_SET_COLLECTIVES_SYMBOL,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr}));
    Block *entry = setter.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    Value at = LLVM::AddressOfOp::create(b, loc, ptr, kTableGlobal);
    LLVM::StoreOp::create(b, loc, entry->getArgument(0), at);
    LLVM::ReturnOp::create(b, loc, ValueRange());
  }

  /// The group index of `axes` (collected, in canonical order, by run()).
  Value group(ImplicitLocOpBuilder &b, ArrayAttr axes) {
    auto it = llvm::find(groups, axes);
    assert(it != groups.end() && "a collective's group was not collected");
    int32_t index = it - groups.begin();
    return LLVM::ConstantOp::create(b, b.getI32Type(),
                                    b.getI32IntegerAttr(index));
  }

  /// Calls field `field` of the table with the context and `args`.
  Value call(ImplicitLocOpBuilder &b, Field field, Type result,
             ArrayRef<Value> args) {
    Value at = LLVM::AddressOfOp::create(b, ptr, kTableGlobal);
    Value t = LLVM::LoadOp::create(b, ptr, at);
    Value context = LLVM::LoadOp::create(b, ptr, t);
    Value slot =
        LLVM::GEPOp::create(b, ptr, table, t, ArrayRef<LLVM::GEPArg>{0, field});
    Value fn = LLVM::LoadOp::create(b, ptr, slot);
    SmallVector<Type> types = {ptr};
    SmallVector<Value> operands = {fn, context};
    for (Value a : args)
      types.push_back(a.getType());
    llvm::append_range(operands, args);
    auto type = LLVM::LLVMFunctionType::get(result, types);
    auto c = LLVM::CallOp::create(b, type, operands);
    return c.getNumResults() ? c.getResult() : Value();
  }

  Value i32(ImplicitLocOpBuilder &b, int32_t v) {
    return LLVM::ConstantOp::create(b, b.getI32Type(), b.getI32IntegerAttr(v));
  }
  Value i64(ImplicitLocOpBuilder &b, Value index) {
    return arith::IndexCastOp::create(b, b.getI64Type(), index);
  }

  /// The address of `buffer`'s first element, checked dense f32.
  FailureOr<Value> address(ImplicitLocOpBuilder &b, Operation *op,
                           Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    if (!type.getElementType().isF32() || !type.getLayout().isIdentity())
      return op->emitOpError("collectives move dense f32 buffers on the CPU, "
                             "got ")
             << type;
    auto meta = memref::ExtractStridedMetadataOp::create(b, buffer);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, buffer);
    Value bytes = arith::MulIOp::create(b, meta.getOffset(),
                                        arith::ConstantIndexOp::create(b, 4));
    Value at = arith::AddIOp::create(b, base, bytes);
    return LLVM::IntToPtrOp::create(b, ptr, i64(b, at)).getResult();
  }

  /// The product of `buffer`'s dimensions [from, to).
  Value elements(ImplicitLocOpBuilder &b, Value buffer, int64_t from,
                 int64_t to) {
    Value n = arith::ConstantIndexOp::create(b, 1);
    for (int64_t d = from; d < to; ++d)
      n = arith::MulIOp::create(b, n, memref::DimOp::create(b, buffer, d));
    return i64(b, n);
  }

  LogicalResult allReduce(ImplicitLocOpBuilder &b, dist::BufferAllReduceOp op) {
    FailureOr<Value> data = address(b, op, op.getBuffer());
    if (failed(data))
      return failure();
    int32_t kind =
        op.getReduction() == dist::ReductionKind::sum   ? LLMC_COLLECTIVE_SUM
        : op.getReduction() == dist::ReductionKind::max ? LLMC_COLLECTIVE_MAX
                                                        : LLMC_COLLECTIVE_MIN;
    int64_t rank = op.getBuffer().getType().getRank();
    call(b, kAllReduce, LLVM::LLVMVoidType::get(ctx),
         {group(b, op.getAxes()), *data, elements(b, op.getBuffer(), 0, rank),
          i32(b, LLMC_COLLECTIVE_F32), i32(b, kind)});
    op.erase();
    return success();
  }

  LogicalResult allGather(ImplicitLocOpBuilder &b, dist::BufferAllGatherOp op) {
    FailureOr<Value> send = address(b, op, op.getInput());
    FailureOr<Value> recv = address(b, op, op.getOutput());
    if (failed(send) || failed(recv))
      return failure();
    int64_t axis = op.getGatherAxis();
    int64_t rank = op.getInput().getType().getRank();
    call(b, kAllGather, LLVM::LLVMVoidType::get(ctx),
         {group(b, op.getAxes()), *send, *recv,
          elements(b, op.getInput(), 0, axis),
          elements(b, op.getInput(), axis, rank), i32(b, LLMC_COLLECTIVE_F32)});
    op.erase();
    return success();
  }

  /// A send or receive of `buffer` with the member at `peer` (a position
  /// along `axes`, linearized major first).
  LogicalResult pointToPoint(ImplicitLocOpBuilder &b, Operation *op,
                             Field field, Value buffer, ArrayAttr axes,
                             ArrayRef<int64_t> peer) {
    FailureOr<Value> data = address(b, op, buffer);
    if (failed(data))
      return failure();
    int64_t linear = 0;
    for (auto [axis, pos] : llvm::zip(axes.getAsValueRange<StringAttr>(), peer))
      linear = linear * mesh.getAxisSize(axis) + pos;
    int64_t rank = cast<MemRefType>(buffer.getType()).getRank();
    Value bytes = arith::MulIOp::create(
        b, elements(b, buffer, 0, rank),
        LLVM::ConstantOp::create(b, b.getI64Type(), b.getI64IntegerAttr(4)));
    call(b, field, LLVM::LLVMVoidType::get(ctx),
         {group(b, axes),
          LLVM::ConstantOp::create(b, b.getI64Type(),
                                   b.getI64IntegerAttr(linear)),
          *data, bytes});
    op->erase();
    return success();
  }

  /// The module's one mesh (erased when run() ends).
  dist::MeshOp mesh;

  LogicalResult position(ImplicitLocOpBuilder &b, dist::AxisIndexOp op) {
    Value pos = call(b, kPosition, b.getI64Type(), {group(b, op.getAxes())});
    op.replaceAllUsesWith(
        arith::IndexCastOp::create(b, b.getIndexType(), pos).getResult());
    op.erase();
    return success();
  }
};

struct CPULowerCollectivesPass
    : llmc::cpu::impl::CPULowerCollectivesBase<CPULowerCollectivesPass> {
  void runOnOperation() override {
    if (failed(Lowering(getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace
