//===- ProfileKernels.cpp - time every kernel call into exported counters -===//
#include "Target/CPU/Passes.h"

#include "llmc/abi.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include <map>

namespace llmc::cpu {
#define GEN_PASS_DEF_CPUPROFILEKERNELS
#include "Target/CPU/Passes.h.inc"
} // namespace llmc::cpu

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kClock = "llmc_profile_clock";
/// CLOCK_MONOTONIC on Linux; its struct timespec is two 64-bit fields.
constexpr int32_t kMonotonic = 1;

/// `llmc_profile_clock() -> i64`: the monotonic clock in nanoseconds.
func::FuncOp buildClock(OpBuilder &b, Location loc, ModuleOp module) {
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  auto timespec = LLVM::LLVMStructType::getLiteral(ctx, {i64, i64});
  auto gettime = module.lookupSymbol<func::FuncOp>("clock_gettime");
  if (gettime &&
      gettime.getFunctionType() != b.getFunctionType({i32, ptr}, {i32})) {
    gettime.emitError("cpu-profile-kernels: clock_gettime is declared with "
                      "another type than (i32, !llvm.ptr) -> i32");
    return {};
  }
  if (!gettime) {
    gettime = func::FuncOp::create(b, loc, "clock_gettime",
                                   b.getFunctionType({i32, ptr}, {i32}));
    gettime.setPrivate();
  }
  auto clock =
      func::FuncOp::create(b, loc, kClock, b.getFunctionType({}, {i64}));
  clock.setPrivate();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(clock.addEntryBlock());
  Value one = LLVM::ConstantOp::create(b, loc, i64, 1);
  Value ts = LLVM::AllocaOp::create(b, loc, ptr, timespec, one);
  Value id = arith::ConstantIntOp::create(b, loc, i32, kMonotonic);
  func::CallOp::create(b, loc, gettime, ValueRange{id, ts});
  Value sec = LLVM::LoadOp::create(b, loc, i64, ts);
  Value nsecAt = LLVM::GEPOp::create(b, loc, ptr, timespec, ts,
                                     ArrayRef<LLVM::GEPArg>{0, 1});
  Value nsec = LLVM::LoadOp::create(b, loc, i64, nsecAt);
  Value billion = arith::ConstantIntOp::create(b, loc, i64, 1000000000);
  Value ns = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, sec, billion), nsec);
  func::ReturnOp::create(b, loc, ns);
  return clock;
}

/// counter[slot] += value.
void accumulate(OpBuilder &b, Location loc, memref::GlobalOp counter,
                Value slot, Value value) {
  Value array = memref::GetGlobalOp::create(b, loc, counter.getType(),
                                            counter.getSymName());
  Value old = memref::LoadOp::create(b, loc, array, slot);
  Value sum = arith::AddIOp::create(b, loc, old, value);
  memref::StoreOp::create(b, loc, sum, array, slot);
}

struct CPUProfileKernelsPass
    : llmc::cpu::impl::CPUProfileKernelsBase<CPUProfileKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module->getAttrOfType<ArrayAttr>("llmc.kernels");
    if (!kernels) {
      module.emitError("cpu-profile-kernels: the module has no llmc.kernels "
                       "(run tl-estimate-cost first)");
      return signalPassFailure();
    }
    for (StringRef name : {StringRef(kClock), StringRef(LLMC_PROFILE_NS_SYMBOL),
                           StringRef(LLMC_PROFILE_CALLS_SYMBOL),
                           StringRef(LLMC_PROFILE_COUNT_SYMBOL)})
      if (module.lookupSymbol(name)) {
        module.emitError("cpu-profile-kernels: the module already defines ")
            << name;
        return signalPassFailure();
      }
    // A slot per (kernel, caller): a kernel that prefill and decode share
    // is timed apart for each.
    std::map<std::pair<std::string, std::string>, int64_t> slots;
    for (auto [i, k] : llvm::enumerate(kernels)) {
      auto dict = dyn_cast<DictionaryAttr>(k);
      auto name = dict ? dict.getAs<StringAttr>("name") : StringAttr();
      auto caller = dict ? dict.getAs<StringAttr>("caller") : StringAttr();
      if (!name || !caller) {
        module.emitError("cpu-profile-kernels: llmc.kernels[")
            << i << "] is not a dictionary with a name and a caller";
        return signalPassFailure();
      }
      slots[{name.str(), caller.str()}] = static_cast<int64_t>(i);
    }

    Location loc = module.getLoc();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Type i64 = b.getI64Type();
    auto type = MemRefType::get({std::max<int64_t>(1, kernels.size())}, i64);
    auto zeros = DenseElementsAttr::get(
        RankedTensorType::get(type.getShape(), i64), b.getI64IntegerAttr(0));
    auto global = [&](StringRef name) {
      return memref::GlobalOp::create(b, loc, name, b.getStringAttr("public"),
                                      type, zeros, /*constant=*/false,
                                      b.getI64IntegerAttr(64));
    };
    memref::GlobalOp ns = global(LLMC_PROFILE_NS_SYMBOL);
    memref::GlobalOp calls = global(LLMC_PROFILE_CALLS_SYMBOL);
    // How many slots the arrays have, for the runtime to check against
    // the metadata.
    memref::GlobalOp::create(
        b, loc, LLMC_PROFILE_COUNT_SYMBOL, b.getStringAttr("public"),
        MemRefType::get({1}, i64),
        DenseElementsAttr::get(
            RankedTensorType::get({1}, i64),
            b.getI64IntegerAttr(static_cast<int64_t>(kernels.size()))),
        /*constant=*/true, /*alignment=*/IntegerAttr());
    func::FuncOp clock = buildClock(b, loc, module);
    if (!clock)
      return signalPassFailure();

    auto slotOf = [&](func::CallOp call) {
      auto caller = call->getParentOfType<func::FuncOp>();
      return slots.find(
          {call.getCallee().str(), caller ? caller.getSymName().str() : ""});
    };
    SmallVector<func::CallOp> kernelCalls;
    module.walk([&](func::CallOp call) {
      if (slotOf(call) != slots.end())
        kernelCalls.push_back(call);
    });
    for (func::CallOp call : kernelCalls) {
      auto it = slotOf(call);
      Location at = call.getLoc();
      b.setInsertionPoint(call);
      Value start = func::CallOp::create(b, at, clock).getResult(0);
      b.setInsertionPointAfter(call);
      Value end = func::CallOp::create(b, at, clock).getResult(0);
      Value slot = arith::ConstantIndexOp::create(b, at, it->second);
      accumulate(b, at, ns, slot, arith::SubIOp::create(b, at, end, start));
      accumulate(b, at, calls, slot,
                 arith::ConstantIntOp::create(b, at, i64, 1));
    }
  }
};

} // namespace
