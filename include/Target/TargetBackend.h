//===- TargetBackend.h - the one interface back ends implement --*- C++ -*-===//
//
// What differs between back ends, behind one interface (cf. Triton's
// TargetInfoBase): the passes that lower scheduled tl loop nests to the
// target's dialects, and how the lowered module becomes loadable code in an
// artifact. Each back end lives in lib/Target/<Backend>/ and is created from
// a TargetDescription; nothing else in llmc branches on the target kind.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TARGET_TARGETBACKEND_H
#define LLMC_TARGET_TARGETBACKEND_H

#include "Target/TargetDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <memory>
#include <string>

namespace llmc {

/// Choices of the lowering that are not facts of the target.
struct LoweringOptions {
  /// Time every kernel call into counters the runtime reads (`llmc compile
  /// --profile`, `llmc bench --profile`).
  bool profile = false;
};

class TargetBackend {
public:
  explicit TargetBackend(TargetDescription target)
      : description(std::move(target)) {}
  virtual ~TargetBackend();
  /// The back end's name in metadata ("cpu").
  virtual llvm::StringRef name() const = 0;
  /// The target it compiles for.
  const TargetDescription &target() const { return description; }
  /// Passes from the tl phase's output (scheduled loop nests over buffers)
  /// down to the target dialect (the `llvm` phase on the CPU).
  virtual void buildLowering(mlir::OpPassManager &pm,
                             const LoweringOptions &options = {}) const = 0;
  /// Writes the loadable code for `lowered` into `dir` and returns its file
  /// name (relative to `dir`).
  virtual llvm::Expected<std::string> emit(mlir::ModuleOp lowered,
                                           llvm::StringRef dir) const = 0;
  /// Adds what the runtime needs beyond the common metadata (the Vulkan
  /// back end's dispatch program) to the metadata object being written.
  virtual void describe(llvm::json::OStream &json,
                        mlir::ModuleOp lowered) const {}

private:
  TargetDescription description;
};

/// What a tool a back end runs (a linker, ptxas) did.
struct ToolRun {
  int exitCode = 0;
  /// Why it could not run at all (empty when it ran).
  std::string error;
  /// Its standard output and error.
  std::string output;
};

/// Runs `program` with `args` (args[0] is the program), its standard output
/// and error into the file `log`, which is read back and removed.
ToolRun runTool(llvm::StringRef program, llvm::ArrayRef<llvm::StringRef> args,
                llvm::StringRef log);

/// The back end for `target`, or an error when llmc has none for its kind.
llvm::Expected<std::unique_ptr<TargetBackend>>
createTargetBackend(const TargetDescription &target);

} // namespace llmc

#endif // LLMC_TARGET_TARGETBACKEND_H
