//===- TargetOption.h - a pass's `target` option, parsed ---------*- C++
//-*-===//
//
// Passes that make a target decision take the driver's resolved description
// as a string option (`target=cpu:znver4,...`); this parses it, reporting a
// bad one at the pass's operation in the pass's name.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TARGET_TARGETOPTION_H
#define LLMC_TARGET_TARGETOPTION_H

#include "Target/TargetDescription.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace llmc {

/// The description `spec` stands for, or an error "<pass>: <why>" at `op`.
inline mlir::FailureOr<TargetDescription>
parseTargetOption(mlir::Operation *op, llvm::StringRef pass,
                  llvm::StringRef spec) {
  llvm::Expected<TargetDescription> desc = TargetDescription::parse(spec);
  if (!desc) {
    op->emitError(pass) << ": " << llvm::toString(desc.takeError());
    return mlir::failure();
  }
  return std::move(*desc);
}

} // namespace llmc

#endif // LLMC_TARGET_TARGETOPTION_H
