//===- CPUBackend.h - the x86 CPU back end ----------------------*- C++ -*-===//
#ifndef LLMC_TARGET_CPU_CPUBACKEND_H
#define LLMC_TARGET_CPU_CPUBACKEND_H

#include "Target/TargetBackend.h"

#include <string>
#include <vector>

namespace llmc {

/// The CPU back end: tl -> scf/vector/OpenMP -> LLVM dialect; object code
/// for the described CPU, linked into model.so.
std::unique_ptr<TargetBackend> createCPUBackend(const TargetDescription &target);

/// Adds the CPU lowering (the `llvm` phase) for `target` to `pm`.
void buildCPULowering(mlir::OpPassManager &pm, const TargetDescription &target,
                      const LoweringOptions &options = {});

/// Translates an LLVM-dialect module to an object file for `target`,
/// optimised at -O3.
llvm::Error emitObjectFile(mlir::ModuleOp module, llvm::StringRef path,
                           const TargetDescription &target);

/// The same, its machine code generated on `jobs` threads: object files
/// `stem`.0.o, `stem`.1.o, ... (`stem`.o with one job), returned in order.
llvm::Expected<std::vector<std::string>>
emitObjectFiles(mlir::ModuleOp module, llvm::StringRef stem,
                const TargetDescription &target, unsigned jobs);

} // namespace llmc

#endif // LLMC_TARGET_CPU_CPUBACKEND_H
