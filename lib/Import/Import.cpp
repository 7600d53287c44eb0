//===- Import.cpp - choose an importer by what the path holds -------------===//
#include "Import/Import.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace llmc;

bool llmc::isGGUF(llvm::StringRef path) {
  auto head = llvm::MemoryBuffer::getFileSlice(path, 4, 0);
  return head && (*head)->getBuffer() == "GGUF";
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
llmc::importModel(mlir::MLIRContext *ctx, llvm::StringRef relPath,
                  const ImportOptions &options) {
  // Parameters record absolute paths: the graph module stays valid wherever
  // it is compiled from.
  llvm::SmallString<256> absPath(relPath);
  llvm::sys::fs::make_absolute(absPath);
  llvm::sys::path::remove_dots(absPath, /*remove_dot_dot=*/true);
  llvm::StringRef path = absPath;
  DecoderConfig config;
  WeightTable weights;
  if (!llvm::sys::fs::exists(path))
    return fileError(path, "no such file or directory");
  if (llvm::sys::fs::is_directory(path)) {
    if (auto e = readHuggingFace(path, config, weights))
      return std::move(e);
    // Long-context models would get enormous KV caches by default.
    if (!options.maxSeqLen && config.maxSeq > 4096)
      config.maxSeq = 4096;
  } else {
    if (isGGUF(path) || path.ends_with(".gguf")) {
      if (auto e = readGGUF(path, config, weights))
        return std::move(e);
    } else if (auto e = readLlama2C(path, config, weights)) {
      return std::move(e);
    }
  }
  if (options.maxSeqLen > 0)
    config.maxSeq = options.maxSeqLen;
  return buildDecoderModule(ctx, config, weights, path);
}
