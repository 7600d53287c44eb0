//===- GPUSchedule.h - the GPU targets' default schedule --------*- C++ -*-===//
#ifndef LLMC_DIALECT_TL_TRANSFORMS_GPUSCHEDULE_H
#define LLMC_DIALECT_TL_TRANSFORMS_GPUSCHEDULE_H

#include "Target/TargetDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace llmc::tl {

/// Maps every top-level loop nest of `fn` onto a grid of workgroups and
/// threads (one kernel launch each) within `target`'s limits: the
/// independent loops at the top of the nest are bound (the innermost split
/// into blockIdx.x x threadIdx.x, the others to blockIdx.y and blockIdx.z),
/// the rest runs serially in each thread; a nest without such a loop runs
/// on one thread. Before that, a reduction with a constant number of
/// outputs is shared by a workgroup per output, and constant independent
/// loops around a sequence of nests get a workgroup each with the nests as
/// its steps. (lib/Dialect/TL/Transforms/GPUSchedule.cpp)
mlir::LogicalResult scheduleForGPU(mlir::func::FuncOp fn,
                                   const TargetDescription &target);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_TRANSFORMS_GPUSCHEDULE_H
