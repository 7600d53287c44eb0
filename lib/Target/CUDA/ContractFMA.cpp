//===- ContractFMA.cpp - float products fused into their sums -------------===//
#include "Target/CUDA/Passes.h"

namespace llmc::cuda {
#define GEN_PASS_DEF_CUDACONTRACTFMA
#include "Target/CUDA/Passes.h.inc"
} // namespace llmc::cuda

using namespace mlir;

namespace {

struct CUDAContractFMAPass
    : llmc::cuda::impl::CUDAContractFMABase<CUDAContractFMAPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (!isa<arith::MulFOp, arith::AddFOp, arith::SubFOp>(op))
        return;
      auto fm = cast<arith::ArithFastMathInterface>(op);
      arith::FastMathFlags flags =
          fm.getFastMathFlagsAttr().getValue() | arith::FastMathFlags::contract;
      op->setAttr(fm.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(op->getContext(), flags));
    });
  }
};

} // namespace
