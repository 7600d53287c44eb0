//===- Import.h - model files to graph modules ------------------*- C++ -*-===//
//
// Importers turn a model file into a `graph` module: one `@forward` function
// whose parameters are named external tensors (file, offset, stored dtype),
// never IR constants, and whose locations name the source tensors.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_IMPORT_IMPORT_H
#define LLMC_IMPORT_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace llmc {

/// Hyper-parameters of a Llama-family decoder.
struct DecoderConfig {
  std::string arch;          ///< "llama", "qwen2", "qwen3"
  int64_t dim = 0;           ///< hidden size
  int64_t hiddenDim = 0;     ///< FFN intermediate size
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0;
  int64_t headDim = 0;
  int64_t vocab = 0;
  int64_t maxSeq = 0;        ///< KV cache length compiled in
  double ropeTheta = 10000.0;
  bool ropeInterleaved = false; ///< llama2.c pairs (2i, 2i+1) vs rotate-half
  float rmsEps = 1e-5f;
  bool qkvBias = false;      ///< Qwen2
  bool qkNorm = false;       ///< Qwen3
  bool tiedEmbeddings = false;
  int64_t bos = -1;
  std::vector<int64_t> eos;
};

/// Stored element types of parameters. Q8_0 stays quantized (ggml blocks).
enum class DType { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K };

/// Where a tensor's data lives.
struct TensorSource {
  std::string file;
  uint64_t offset = 0;   ///< byte offset of the first element in `file`
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// The canonical (Hugging Face) names of a decoder's tensors and their data.
using WeightTable = llvm::StringMap<TensorSource>;

/// Options every importer honours.
struct ImportOptions {
  /// KV cache length; 0 keeps the model's own (capped at 4096 for models
  /// that declare very long contexts).
  int64_t maxSeqLen = 0;
};

/// Imports a llama2.c checkpoint, a Hugging Face directory (config.json +
/// safetensors) or a single `.safetensors` file's directory. Errors name the
/// file and, where one is involved, the tensor.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(mlir::MLIRContext *ctx, llvm::StringRef path,
            const ImportOptions &options = {});

/// Reads a llama2.c checkpoint's header and tensor table.
llvm::Error readLlama2C(llvm::StringRef path, DecoderConfig &config,
                        WeightTable &weights);

/// Reads a Hugging Face model directory.
llvm::Error readHuggingFace(llvm::StringRef dir, DecoderConfig &config,
                            WeightTable &weights);

/// True when `path` starts with the GGUF magic number.
bool isGGUF(llvm::StringRef path);

/// Reads a GGUF file (architectures llama, qwen2, qwen3).
llvm::Error readGGUF(llvm::StringRef path, DecoderConfig &config,
                     WeightTable &weights);

/// Reads the tensor table of one safetensors file into `weights`.
llvm::Error readSafetensors(llvm::StringRef path, WeightTable &weights);
/// The same, from the file's bytes (`path` names it in errors).
llvm::Error parseSafetensors(llvm::StringRef path, llvm::StringRef data,
                             WeightTable &weights);

/// Builds the graph module of a decoder from its config and weights, after
/// checking that every tensor it needs is present with the right shape.
/// `modelFile` names the model in diagnostics.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildDecoderModule(mlir::MLIRContext *ctx, const DecoderConfig &config,
                   const WeightTable &weights, llvm::StringRef modelFile);

/// An error "<file>: <message>".
llvm::Error fileError(llvm::StringRef file, const llvm::Twine &message);

} // namespace llmc

#endif // LLMC_IMPORT_IMPORT_H
