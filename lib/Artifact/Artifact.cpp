//===- Artifact.cpp - write an artifact directory from a graph module -----===//
#include "Artifact/Artifact.h"

#include "llmc/abi.h"

#include "Dialect/Dist/Transforms/Passes.h"
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Import/Import.h"
#include "Import/Tokenizer.h"
#include "Target/TargetBackend.h"
#include "Transforms/Pipelines.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstring>
#include <iterator>

using namespace mlir;
using namespace llmc;

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

/// IEEE half to float, exactly.
static float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f,
           mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      bits = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {
struct PlacedParam {
  std::string name;
  int64_t offset;
  graph::ExternalTensorAttr source;
  RankedTensorType type;
  /// A sharded model's slicing of the weight (its local type is `type`);
  /// null where every rank holds it whole.
  dist::ShardingAttr sharding;
};
} // namespace

/// The distinct parameters of `module` in blob order.
static llvm::Expected<std::vector<PlacedParam>> collectParams(ModuleOp module) {
  std::vector<PlacedParam> params;
  llvm::StringSet<> seen;
  std::optional<llvm::Error> error;
  module.walk([&](graph::ParamOp p) {
    if (error || !seen.insert(p.getName()).second)
      return;
    if (!p.getBlobOffset() || !p.getSourceAttr()) {
      error = llvm::createStringError(
          "parameter '" + p.getName().str() +
          "' has no blob offset or source; was it imported from a file?");
      return;
    }
    auto sharding =
        p->getAttrOfType<dist::ShardingAttr>(dist::kShardingAttrName);
    params.push_back(
        {p.getName().str(), static_cast<int64_t>(*p.getBlobOffset()),
         p.getSourceAttr(), p.getResult().getType(),
         sharding && !sharding.isReplicated() ? sharding : nullptr});
  });
  if (error)
    return std::move(*error);
  llvm::sort(params, [](const PlacedParam &a, const PlacedParam &b) {
    return a.offset < b.offset;
  });
  return params;
}

/// `out.size()` 16-bit values of `dtype` (f16, bf16) from `data`, widened
/// to f32.
static void widen(const char *data, Type dtype, std::vector<float> &out) {
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, data + 2 * i, 2);
    out[i] = dtype.isF16() ? halfToFloat(h) : bf16ToFloat(h);
  }
}

/// The weight blob of rank `rank` of a sharded model (metadata's
/// weights.file with {rank} replaced).
static std::string weightsFileOfRank(int64_t rank) {
  return "weights.rank" + std::to_string(rank) + ".bin";
}

/// A rank's place on a sharded model's mesh: the mesh's axes and sizes, and
/// the rank's position along each.
struct MeshPlace {
  llvm::SmallVector<std::string> axes;
  llvm::SmallVector<int64_t> shape, position;

  /// The rank's part along `axes` (major first) and how many parts.
  std::pair<int64_t, int64_t>
  part(llvm::ArrayRef<llvm::StringRef> names) const {
    int64_t index = 0, parts = 1;
    for (llvm::StringRef n : names)
      for (size_t i = 0; i < axes.size(); ++i)
        if (axes[i] == n) {
          index = index * shape[i] + position[i];
          parts *= shape[i];
        }
    return {index, parts};
  }
};

/// The rank's slice of a sharded weight, from the whole tensor's bytes
/// `data` in the file's type `dtype` (rows of blocks for a quantized one):
/// each split dimension's part at the rank's position on the mesh.
static llvm::Expected<std::vector<char>> sliceWeight(const PlacedParam &p,
                                                     const MeshPlace &place,
                                                     const char *data,
                                                     Type dtype) {
  llvm::SmallVector<int64_t> local(p.type.getShape()), whole = local,
                                                       start(local.size(), 0);
  for (unsigned d = 0; d < local.size(); ++d) {
    auto [index, parts] = place.part(p.sharding.getDimAxes(d));
    whole[d] = local[d] * parts;
    start[d] = local[d] * index;
  }
  // Bytes of a group of `per` consecutive elements along the last
  // dimension: a quantized block, or one element.
  int64_t per = 1, groupBytes = dtype.isF32() ? 4 : 2;
  if (int64_t block = graph::quantBlockBytes(dtype)) {
    per = graph::quantBlockElements(dtype);
    groupBytes = block;
  }
  int64_t cols = whole.back(), localCols = local.back();
  if (localCols % per || start.back() % per)
    return llvm::createStringError(
        "weight '" + p.name + "' is split inside its quantized blocks (" +
        std::to_string(localCols) + " columns a rank, blocks of " +
        std::to_string(per) + ")");
  int64_t localRows = 1, firstRow = 0;
  if (local.size() == 2) {
    localRows = local[0];
    firstRow = start[0];
  }
  int64_t rowBytes = cols / per * groupBytes;
  int64_t sliceBytes = localCols / per * groupBytes;
  int64_t skip = start.back() / per * groupBytes;
  std::vector<char> out(localRows * sliceBytes);
  for (int64_t r = 0; r < localRows; ++r)
    std::memcpy(&out[r * sliceBytes], data + (firstRow + r) * rowBytes + skip,
                sliceBytes);
  return out;
}

/// Writes weights.bin: each parameter at its blob offset, in its type; a
/// sharded weight's slice for the rank at `place`.
static llvm::Error
writeWeights(llvm::ArrayRef<PlacedParam> params, int64_t totalBytes,
             llvm::StringRef path,
             const std::function<void(uint64_t, uint64_t)> &progress,
             const MeshPlace *place = nullptr) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fileError(path, "cannot write: " + ec.message());
  int64_t pos = 0;
  std::vector<float> converted;
  std::vector<char> packed;
  for (const PlacedParam &p : params) {
    if (p.offset < pos)
      return fileError(path, "overlapping parameters at '" + p.name + "'");
    out.write_zeros(p.offset - pos);
    int64_t n = p.type.getNumElements();
    Type dtype = p.source.getDtype();
    bool quantized = graph::quantBlockBytes(dtype) != 0;
    // Data already in the parameter's type (quantized blocks, f32, 16-bit
    // matrices) is copied as it is; 16-bit vectors are widened to f32.
    bool asIs = dtype == p.type.getElementType();
    uint64_t sourceBytes = quantized ? graph::storageBytes(p.type)
                                     : n * (dtype.isF32() ? 4 : 2);
    // A slice reads the whole tensor (its parts multiply the local size).
    uint64_t readBytes = sourceBytes;
    if (p.sharding && place)
      for (unsigned d = 0; d < p.type.getRank(); ++d)
        readBytes *= place->part(p.sharding.getDimAxes(d)).second;
    llvm::StringRef file = p.source.getFile();
    auto buf =
        llvm::MemoryBuffer::getFileSlice(file, readBytes, p.source.getOffset());
    if (!buf)
      return fileError(file, "cannot read tensor '" + p.name +
                                 "': " + buf.getError().message());
    if ((*buf)->getBufferSize() != readBytes)
      return fileError(file, "tensor '" + p.name + "' is truncated");
    const char *data = (*buf)->getBufferStart();
    std::vector<char> slice;
    if (p.sharding && place) {
      auto sliced = sliceWeight(p, *place, data, dtype);
      if (!sliced)
        return sliced.takeError();
      slice = std::move(*sliced);
      data = slice.data();
    }
    graph::InterleavedAttr layout = graph::getInterleaving(p.type);
    if (layout && graph::isInterleavableFloat(p.type.getElementType())) {
      // A float matrix's rows side by side, element by element: the
      // elements in the parameter's type first, then their places.
      Type element = p.type.getElementType();
      const char *elems = data;
      if (!asIs) {
        // (Only f32 is widened: graph.param's verifier.)
        converted.resize(n);
        widen(data, dtype, converted);
        elems = reinterpret_cast<const char *>(converted.data());
      }
      int64_t rows = p.type.getDimSize(0), cols = p.type.getDimSize(1);
      int64_t bytes = element.getIntOrFloatBitWidth() / 8;
      int64_t group = layout.getRows(), total = rows * cols * bytes;
      packed.resize(total);
      // Element k of row n at ((n / R) * K + k) * R + n % R
      // (graph::interleavedOffset): a group's rows read in order, written
      // R elements apart within the group's block (which stays in cache).
      for (int64_t row = 0; row < rows; ++row) {
        char *base =
            &packed[graph::interleavedOffset(layout, element, cols, row, 0, 0)];
        const char *src = elems + row * cols * bytes;
        for (int64_t col = 0; col < cols; ++col)
          std::memcpy(base + col * group * bytes, src + col * bytes, bytes);
      }
      out.write(packed.data(), total);
    } else if (layout) {
      // Rows side by side (#graph.interleaved), read back by the matmuls'
      // lanes.
      Type element = p.type.getElementType();
      int64_t rows = p.type.getDimSize(0);
      int64_t blocks = p.type.getDimSize(1) / graph::quantBlockElements(element);
      int64_t blockBytes = graph::quantBlockBytes(element);
      int64_t header = graph::quantHeaderBytes(element);
      int64_t start = graph::quantHeaderStart(element);
      int64_t chunk = layout.getChunk();
      packed.resize(sourceBytes);
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const char *src = data + (row * blocks + blk) * blockBytes;
          auto at = [&](int64_t byte) {
            return graph::interleavedOffset(layout, element, blocks, row, blk,
                                            byte);
          };
          // The header's bytes one by one, the quants (the block's other
          // bytes, before and after it) a chunk at a time.
          for (int64_t h = start; h < start + header; ++h)
            packed[at(h)] = src[h];
          for (int64_t q = 0; q < blockBytes - header; q += chunk) {
            int64_t byte = q < start ? q : q + header;
            std::memcpy(&packed[at(byte)], src + byte, chunk);
          }
        }
      out.write(packed.data(), sourceBytes);
    } else if (asIs) {
      out.write(data, sourceBytes);
    } else {
      converted.resize(n);
      widen(data, dtype, converted);
      out.write(reinterpret_cast<const char *>(converted.data()), n * 4);
    }
    pos = p.offset + graph::storageBytes(p.type);
    if (progress)
      progress(pos, totalBytes);
  }
  out.write_zeros(totalBytes - pos);
  out.close();
  if (out.has_error())
    return fileError(path, "write failed: " + out.error().message());
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

/// The bytes of weights.bin one decode step reads: every parameter, but of
/// a table only ever gathered from (an untied embedding) one row.
static int64_t decodeReadBytes(ModuleOp module,
                               llvm::ArrayRef<PlacedParam> params) {
  llvm::StringMap<bool> gatheredOnly;
  module.walk([&](graph::ParamOp p) {
    bool table = llvm::all_of(p->getUses(), [](OpOperand &use) {
      auto gather = dyn_cast<graph::EmbeddingOp>(use.getOwner());
      return gather && use.get() == gather.getTable();
    });
    auto [it, inserted] = gatheredOnly.try_emplace(p.getName(), table);
    if (!inserted)
      it->second = it->second && table;
  });
  int64_t total = 0;
  for (const PlacedParam &p : params) {
    int64_t bytes = graph::storageBytes(p.type);
    if (gatheredOnly.lookup(p.name) && p.type.getRank() == 2)
      bytes /= p.type.getDimSize(0);
    total += bytes;
  }
  return total;
}

/// The arithmetic of one forward call, as `llmc bench --roofline` puts
/// prefill against the FMA peak: multiply-adds count 2.
struct ComputeCount {
  int64_t tokenFlops = 0; ///< per token: the matmuls every row goes through
  int64_t rowFlops = 0;   ///< per output row: those after graph.last_rows
  int64_t pairFlops = 0;  ///< per (query, attended position): q.k and p.V
};

static ComputeCount countCompute(ModuleOp module) {
  ComputeCount c;
  // The entry function (forward); its decode/prefill versions come later.
  func::FuncOp entry;
  module.walk([&](func::FuncOp f) {
    if (!entry && !f.isDeclaration())
      entry = f;
  });
  if (!entry)
    return c;
  llvm::SetVector<Operation *> perRow;
  entry.walk([&](graph::LastRowsOp rows) { getForwardSlice(rows.getOperation(), &perRow); });
  entry.walk([&](graph::MatmulOp mm) {
    RankedTensorType w = mm.getWeight().getType();
    int64_t flops = 2 * w.getDimSize(0) * w.getDimSize(1);
    (perRow.contains(mm) ? c.rowFlops : c.tokenFlops) += flops;
  });
  entry.walk([&](graph::AttentionOp att) {
    c.pairFlops += 2 * 2 * att.getNumHeads() * att.getHeadDim();
  });
  return c;
}

/// llmc/abi.h's names of the call's sizes, and the entry's arguments that
/// are those sizes (tl-plan-arena's "argN" / "argN.D"), in the same order.
static const char *const kArenaSizeNames[] = {LLMC_ARENA_SIZE_NAMES};
static const llvm::StringRef kArenaSizeArgs[] = {"arg0.0", "arg1", "arg4"};
static_assert(std::size(kArenaSizeNames) == std::size(kArenaSizeArgs));

/// One term of an arena plan: `bytes` times the product of the sizes in
/// `of` (indices into kArenaSizeNames).
struct ArenaTerm {
  int64_t bytes;
  llvm::SmallVector<unsigned, 2> of;
};
using ArenaPlan = llvm::SmallVector<ArenaTerm>;

/// The entry's arena plans as tl-plan-arena recorded them (`llmc.arena`,
/// sizes named by argument), in the ABI's size names.
static llvm::Expected<llvm::SmallVector<ArenaPlan>>
entryArena(ModuleOp lowered) {
  Operation *entry =
      SymbolTable::lookupSymbolIn(lowered, LLMC_FORWARD_FUNCTION);
  auto plans = entry ? entry->getAttrOfType<ArrayAttr>("llmc.arena")
                     : ArrayAttr();
  if (!plans)
    return llvm::createStringError(
        "the lowered module's @" LLMC_FORWARD_FUNCTION
        " has no arena plan (llmc.arena, from tl-plan-arena)");
  llvm::SmallVector<ArenaPlan> result;
  for (Attribute plan : plans) {
    ArenaPlan &out = result.emplace_back();
    for (Attribute t : llvm::cast<ArrayAttr>(plan)) {
      auto term = llvm::cast<DictionaryAttr>(t);
      ArenaTerm &parsed = out.emplace_back();
      parsed.bytes = term.getAs<IntegerAttr>("bytes").getInt();
      for (Attribute a : term.getAs<ArrayAttr>("of")) {
        llvm::StringRef arg = llvm::cast<StringAttr>(a).getValue();
        const auto *it = llvm::find(kArenaSizeArgs, arg);
        if (it == std::end(kArenaSizeArgs))
          return llvm::createStringError(
              "@" LLMC_FORWARD_FUNCTION "'s arena depends on " + arg.str() +
              ", which is not one of its sizes (tokens, pos0, n_out)");
        parsed.of.push_back(it - std::begin(kArenaSizeArgs));
      }
    }
  }
  return result;
}

/// One term of a kernel's work: `c` times the product of the sizes in `of`
/// (ABI names, "tokens", or a size's floor over a constant, "tokens/4").
struct WorkTerm {
  double c;
  llvm::SmallVector<std::string, 2> of;
};

/// A kernel's work per forward call as tl-estimate-cost recorded it
/// (`llmc.kernels`), in the ABI's size names.
struct KernelWork {
  std::string name, phase;
  /// The schedule's tuning key (Target/Tuning.h), or empty.
  std::string tune;
  int64_t calls;
  bool exact;
  /// flops, int_ops, instructions, bytes, parallel, trips.
  llvm::SmallVector<WorkTerm> terms[6];
};
static const char *const kWorkNames[] = {"flops", "int_ops",  "instructions",
                                         "bytes", "parallel", "trips"};

/// The most sizes a term of a kernel's work may multiply (the runtime's
/// limit, runtime/src/Metadata.cpp).
constexpr size_t kMaxWorkSizes = 4;

/// The kernels' work as tl-estimate-cost recorded it. The estimate is
/// informational: a term the metadata cannot state (a size that is not one
/// of the forward call's, more than kMaxWorkSizes of them) is left out and
/// its kernel marked inexact, rather than failing the compilation.
static std::vector<KernelWork> kernelWork(ModuleOp lowered) {
  std::vector<KernelWork> result;
  auto kernels = lowered->getAttrOfType<ArrayAttr>("llmc.kernels");
  if (!kernels)
    return result;
  for (Attribute k : kernels) {
    auto dict = llvm::cast<DictionaryAttr>(k);
    KernelWork &w = result.emplace_back();
    w.name = dict.getAs<StringAttr>("name").str();
    w.phase = dict.getAs<StringAttr>("phase").str();
    if (auto tune = dict.getAs<StringAttr>("tune"))
      w.tune = tune.str();
    w.calls = dict.getAs<IntegerAttr>("calls").getInt();
    w.exact = dict.getAs<BoolAttr>("exact").getValue();
    for (size_t i = 0; i < std::size(kWorkNames); ++i)
      for (Attribute t : dict.getAs<ArrayAttr>(kWorkNames[i])) {
        auto term = llvm::cast<DictionaryAttr>(t);
        WorkTerm parsed;
        parsed.c = term.getAs<FloatAttr>("c").getValueAsDouble();
        bool stated = term.getAs<ArrayAttr>("of").size() <= kMaxWorkSizes;
        for (Attribute a : term.getAs<ArrayAttr>("of")) {
          auto [arg, divisor] = llvm::cast<StringAttr>(a).getValue().split('/');
          const auto *it = llvm::find(kArenaSizeArgs, arg);
          if (it == std::end(kArenaSizeArgs)) {
            stated = false;
            break;
          }
          std::string name = kArenaSizeNames[it - std::begin(kArenaSizeArgs)];
          parsed.of.push_back(divisor.empty() ? name
                                              : name + "/" + divisor.str());
        }
        if (stated)
          w.terms[i].push_back(std::move(parsed));
        else
          w.exact = false;
      }
  }
  return result;
}

/// The arena bytes of a call (the largest plan).
static int64_t arenaBytes(llvm::ArrayRef<ArenaPlan> plans, int64_t tokens,
                          int64_t pos0, int64_t nOut) {
  const int64_t sizes[] = {tokens, pos0, nOut};
  int64_t largest = 0;
  for (const ArenaPlan &plan : plans) {
    int64_t total = 0;
    for (const ArenaTerm &term : plan) {
      int64_t v = term.bytes;
      for (unsigned s : term.of)
        v *= sizes[s];
      total += v;
    }
    largest = std::max(largest, total);
  }
  return largest;
}

static std::string formatBytes(int64_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  if (bytes < (int64_t(1) << 20))
    return llvm::formatv("{0:f1} KiB", bytes / 1024.0).str();
  if (bytes < (int64_t(1) << 30))
    return llvm::formatv("{0:f1} MiB", bytes / double(1 << 20)).str();
  return llvm::formatv("{0:f2} GiB", bytes / double(1 << 30)).str();
}

/// metadata's kv_cache.dtype (llmc/abi.h).
static llvm::StringRef kvCacheDtype(graph::KVCacheType cache) {
  return cache.getElementType().isF16() ? "f16" : "f32";
}

/// What `llmc compile` prints about memory: the KV cache, and the arena of a
/// decode step at the full context and of prompts.
static std::string describeMemory(llvm::ArrayRef<ArenaPlan> plans,
                                  graph::KVCacheType cache) {
  int64_t maxSeq = cache.getMaxSeq();
  int64_t kvBytes = cache.getLayers() * 2 * cache.getKvHeads() * maxSeq *
                    cache.getHeadDim() *
                    cache.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t prompt = std::min<int64_t>(512, maxSeq);
  std::string s = "KV cache " + formatBytes(kvBytes) + " (" +
                  kvCacheDtype(cache).str() + "); activations " +
                  formatBytes(arenaBytes(plans, 1, maxSeq - 1, 1)) +
                  " per decode step at " + std::to_string(maxSeq) +
                  " positions, " + formatBytes(arenaBytes(plans, prompt, 0, 1)) +
                  " for a " + std::to_string(prompt) + "-token prompt";
  if (prompt < maxSeq)
    s += ", " + formatBytes(arenaBytes(plans, maxSeq, 0, 1)) + " for " +
         std::to_string(maxSeq);
  return s;
}

static llvm::Error
writeMetadata(llvm::StringRef path, ModuleOp module, graph::KVCacheType cache,
              llvm::ArrayRef<PlacedParam> params, int64_t weightBytes,
              int64_t decodeBytes, const ComputeCount &compute,
              llvm::ArrayRef<ArenaPlan> arena,
              llvm::ArrayRef<KernelWork> kernels, bool profiled,
              const TargetBackend &backend, llvm::StringRef library,
              llvm::StringRef tokenizerKind, llvm::StringRef tokenizerFile,
              int64_t stages) {
  auto model = module->getAttrOfType<DictionaryAttr>("graph.model");
  if (!model)
    return llvm::createStringError("the module has no graph.model description");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return fileError(path, "cannot write: " + ec.message());
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("format", LLMC_ARTIFACT_FORMAT);
    j.attribute("version", LLMC_ARTIFACT_VERSION);
    j.attribute("target", backend.name());
    j.attribute("target_description", backend.target().str());
    j.attribute("library", library);
    auto mesh = module->getAttrOfType<DictionaryAttr>("dist.mesh");
    j.attributeObject("weights", [&] {
      j.attribute("file", mesh ? "weights.rank{rank}.bin" : "weights.bin");
      j.attribute("bytes", weightBytes);
      j.attribute("decode_read_bytes", decodeBytes);
    });
    if (mesh) {
      // The mesh (cpu-lower-collectives' record), its ranks, the groups
      // the collectives' table calls name, and the plan's prediction.
      j.attributeObject("dist", [&] {
        auto shape = mesh.getAs<DenseI64ArrayAttr>("shape");
        int64_t ranks = 1;
        for (int64_t n : shape.asArrayRef())
          ranks *= n;
        j.attribute("ranks", ranks);
        j.attributeArray("shape", [&] {
          for (int64_t n : shape.asArrayRef())
            j.value(n);
        });
        auto names = [&](ArrayAttr axes) {
          j.array([&] {
            for (llvm::StringRef a : axes.getAsValueRange<StringAttr>())
              j.value(a);
          });
        };
        j.attributeBegin("axes");
        names(mesh.getAs<ArrayAttr>("axes"));
        j.attributeEnd();
        j.attributeArray("groups", [&] {
          if (auto groups = module->getAttrOfType<ArrayAttr>("dist.groups"))
            for (auto g : groups.getAsRange<ArrayAttr>())
              names(g);
        });
        if (auto plan = module->getAttrOfType<DictionaryAttr>("dist.plan")) {
          if (auto t = plan.getAs<FloatAttr>("seconds_per_token"))
            j.attribute("predicted_seconds_per_token", t.getValueAsDouble());
          if (auto k = plan.getAs<IntegerAttr>("micro_batch");
              k && k.getInt() > 0)
            j.attribute("micro_batch", k.getInt());
          // A pipeline: its axes, and (in the first stage's metadata) the
          // directory of each stage's artifact.
          if (auto pp = plan.getAs<ArrayAttr>("pp"); pp && !pp.empty()) {
            j.attributeBegin("pp");
            names(pp);
            j.attributeEnd();
            if (auto stage = module->getAttrOfType<IntegerAttr>("dist.stage"))
              j.attribute("stage", stage.getInt());
            if (stages > 1)
              j.attributeArray("stage_dirs", [&] {
                for (int64_t s = 0; s < stages; ++s)
                  j.value(s == 0 ? std::string(".")
                                 : "stage" + std::to_string(s));
              });
          }
        }
      });
    }
    j.attributeObject("compute", [&] {
      j.attribute("token_flops", compute.tokenFlops);
      j.attribute("row_flops", compute.rowFlops);
      j.attribute("pair_flops", compute.pairFlops);
    });
    j.attributeObject("model", [&] {
      for (NamedAttribute a : model) {
        if (auto i = llvm::dyn_cast<IntegerAttr>(a.getValue()))
          j.attribute(a.getName().strref(), i.getInt());
        else if (auto f = llvm::dyn_cast<FloatAttr>(a.getValue()))
          j.attribute(a.getName().strref(), f.getValueAsDouble());
        else if (auto s = llvm::dyn_cast<StringAttr>(a.getValue()))
          j.attribute(a.getName().strref(), s.strref());
        else if (auto arr = llvm::dyn_cast<ArrayAttr>(a.getValue()))
          j.attributeArray(a.getName().strref(), [&] {
            for (Attribute e : arr)
              j.value(llvm::cast<IntegerAttr>(e).getInt());
          });
      }
    });
    j.attributeObject("kv_cache", [&] {
      j.attribute("dtype", kvCacheDtype(cache));
      j.attributeArray("shape", [&] {
        for (int64_t d : {cache.getLayers(), int64_t(2), cache.getKvHeads(),
                          cache.getMaxSeq() * cache.getHeadDim()})
          j.value(d);
      });
      j.attribute("layout", cache.getKeysByDim() ? LLMC_KV_CACHE_LAYOUT_FLASH
                            : cache.getValuesByPosition()
                                ? LLMC_KV_CACHE_LAYOUT_BY_POSITION
                            : cache.getValuesBlock() > 0
                                ? LLMC_KV_CACHE_LAYOUT_BLOCKED
                                : LLMC_KV_CACHE_LAYOUT);
      if (cache.getValuesBlock() > 0)
        j.attribute("values_block", cache.getValuesBlock());
    });
    j.attributeObject("entry",
                      [&] { j.attribute("forward", LLMC_FORWARD_SYMBOL); });
    j.attributeObject("arena", [&] {
      j.attribute("alignment", LLMC_ARENA_ALIGNMENT);
      j.attributeArray("plans", [&] {
        for (const ArenaPlan &plan : arena)
          j.array([&] {
            for (const ArenaTerm &term : plan)
              j.object([&] {
                j.attribute("bytes", term.bytes);
                j.attributeArray("of", [&] {
                  for (unsigned size : term.of)
                    j.value(kArenaSizeNames[size]);
                });
              });
          });
      });
    });
    // Each kernel's work per call (tl-estimate-cost), and whether the
    // library times its calls (llmc/abi.h, Profile).
    j.attribute("profiled", profiled);
    j.attributeArray("kernels", [&] {
      for (const KernelWork &k : kernels)
        j.object([&] {
          j.attribute("name", k.name);
          j.attribute("phase", k.phase);
          j.attribute("calls", k.calls);
          j.attribute("exact", k.exact);
          if (!k.tune.empty())
            j.attribute("tune", k.tune);
          for (size_t i = 0; i < std::size(kWorkNames); ++i)
            j.attributeArray(kWorkNames[i], [&] {
              for (const WorkTerm &t : k.terms[i])
                j.object([&] {
                  j.attribute("c", t.c);
                  j.attributeArray("of", [&] {
                    for (const std::string &size : t.of)
                      j.value(size);
                  });
                });
            });
        });
    });
    backend.describe(j, module);
    j.attributeArray("params", [&] {
      for (const PlacedParam &p : params)
        j.object([&] {
          j.attribute("name", p.name);
          Type element = p.type.getElementType();
          j.attribute("dtype", element.isF16()                     ? "f16"
                               : element.isBF16()                  ? "bf16"
                               : llvm::isa<graph::Q8_0Type>(element) ? "q8_0"
                               : llvm::isa<graph::Q4_0Type>(element) ? "q4_0"
                               : llvm::isa<graph::Q6_KType>(element) ? "q6_k"
                               : llvm::isa<graph::Q4_KType>(element) ? "q4_k"
                                                                     : "f32");
          j.attributeArray("shape", [&] {
            for (int64_t d : p.type.getShape())
              j.value(d);
          });
          j.attribute("offset", p.offset);
          j.attribute("bytes", graph::storageBytes(p.type));
          if (graph::InterleavedAttr layout = graph::getInterleaving(p.type))
            j.attributeObject("interleaved", [&] {
              j.attribute("rows", layout.getRows());
              j.attribute("chunk", layout.getChunk());
            });
        });
    });
    if (!tokenizerKind.empty())
      j.attributeObject("tokenizer", [&] {
        j.attribute("kind", tokenizerKind);
        j.attribute("file", tokenizerFile);
      });
    else
      j.attribute("tokenizer", nullptr);
  });
  os << "\n";
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

/// Replaces `outDir` with `tmp`, refusing to delete anything that is not an
/// earlier artifact.
static llvm::Error moveIntoPlace(llvm::StringRef tmp, llvm::StringRef outDir) {
  if (llvm::sys::fs::exists(outDir)) {
    llvm::SmallString<256> meta(outDir);
    llvm::sys::path::append(meta, "metadata.json");
    std::error_code ec;
    bool empty = llvm::sys::fs::directory_iterator(outDir, ec) ==
                 llvm::sys::fs::directory_iterator();
    if (!llvm::sys::fs::is_directory(outDir) ||
        (!empty && !llvm::sys::fs::exists(meta)))
      return fileError(outDir, "exists and is not an llmc artifact; "
                               "refusing to overwrite it");
    if (auto rm = llvm::sys::fs::remove_directories(outDir))
      return fileError(outDir, "cannot replace: " + rm.message());
  }
  if (auto ec = llvm::sys::fs::rename(tmp, outDir))
    return fileError(outDir, "cannot create: " + ec.message());
  return llvm::Error::success();
}

llvm::Error llmc::compileArtifact(ModuleOp module,
                                  const ArtifactOptions &options) {
  MLIRContext *ctx = module.getContext();
  auto backend = createTargetBackend(options.pipeline.target);
  if (!backend)
    return backend.takeError();
  if (!options.tokenizer.empty() && !llvm::sys::fs::exists(options.tokenizer))
    return fileError(options.tokenizer, "no such file");

  // The tokenizer, read (and checked) before the long part: a llama2.c file
  // is kept as it is, anything else becomes an llmc tokenizer file with one
  // token per row of the model's embedding.
  bool llama2cTokenizer = false;
  std::optional<TokenizerSpec> tokenizer;
  if (!options.tokenizer.empty()) {
    if (isLlama2CTokenizer(options.tokenizer)) {
      llama2cTokenizer = true;
    } else {
      auto spec = readTokenizer(options.tokenizer);
      if (!spec)
        return spec.takeError();
      auto model = module->getAttrOfType<DictionaryAttr>("graph.model");
      auto vocab =
          model ? model.getAs<IntegerAttr>("vocab_size") : IntegerAttr();
      if (!vocab)
        return llvm::createStringError(
            "the module has no graph.model vocab_size to check the tokenizer "
            "against");
      if (auto e = padTokenizer(*spec, vocab.getInt(), options.tokenizer))
        return e;
      tokenizer = std::move(*spec);
    }
  }

  auto forward = module.lookupSymbol<func::FuncOp>(LLMC_FORWARD_FUNCTION);
  if (!forward || forward.getNumArguments() != 4 ||
      !llvm::isa<graph::KVCacheType>(forward.getArgumentTypes()[3]))
    return llvm::createStringError(
        "the module has no @forward(tokens, pos0, weights, kv_cache) function");

  // Each phase's wall time, for the caller to print.
  auto phaseStart = std::chrono::steady_clock::now();
  auto phaseDone = [&](llvm::StringRef phase, llvm::StringRef detail = "") {
    auto now = std::chrono::steady_clock::now();
    if (options.onPhase)
      options.onPhase(phase,
                      std::chrono::duration<double>(now - phaseStart).count(),
                      detail);
    phaseStart = now;
  };

  // Pipeline stages (the plan's `stages`, known once stage 0's graph phase
  // has planned): one artifact a stage, the first at the top, stage s in
  // `stage<s>/`; a rank loads its stage's.
  int64_t stages = 1;

  // Everything goes into a sibling temporary directory first.
  llvm::SmallString<256> outDir(options.outDir);
  llvm::sys::path::remove_dots(outDir, /*remove_dot_dot=*/true);
  llvm::SmallString<256> tmp;
  llvm::sys::fs::createUniquePath(outDir + ".tmp-%%%%%%", tmp,
                                  /*MakeAbsolute=*/false);
  if (auto ec = llvm::sys::fs::create_directories(tmp))
    return fileError(tmp, "cannot create: " + ec.message());
  bool done = false;
  llvm::scope_exit cleanup([&] {
    if (!done)
      llvm::sys::fs::remove_directories(tmp);
  });
  std::string tokenizerNote;
  for (int64_t stage = 0; stage < stages; ++stage) {
    // (A sharded model's stages each compile a copy of the imported
    // module.)
    OwningOpRef<ModuleOp> copy;
    if (options.pipeline.distribute)
      copy = module.clone();
    ModuleOp m = copy ? *copy : module;
    PipelineOptions pipeline = options.pipeline;
    pipeline.stage = stage;
    llvm::SmallString<256> dir(tmp);
    if (stage > 0) {
      llvm::sys::path::append(dir, "stage" + std::to_string(stage));
      if (auto ec = llvm::sys::fs::create_directories(dir))
        return fileError(dir, "cannot create: " + ec.message());
    }
    PassManager graphPM(ctx);
    buildGraphPhase(graphPM, pipeline);
    if (failed(graphPM.run(m)))
      return llvm::createStringError("the graph phase failed");
    if (auto plan = m->getAttrOfType<DictionaryAttr>("dist.plan");
        plan && stage == 0)
      if (auto pp = plan.getAs<ArrayAttr>("pp"); pp && !pp.empty())
        stages = plan.getAs<DenseI64ArrayAttr>("stages").size();
    phaseDone(stages > 1 ? "graph, stage " + std::to_string(stage) : "graph");
    if (auto plan = m->getAttrOfType<DictionaryAttr>("dist.plan");
        plan && options.onPlan && stage == 0) {
      std::string text;
      llvm::raw_string_ostream os(text);
      auto roles = [&](llvm::StringRef key) {
        if (auto axes = plan.getAs<ArrayAttr>(key))
          for (llvm::StringRef a : axes.getAsValueRange<StringAttr>())
            if (auto mesh = m.lookupSymbol<dist::MeshOp>("mesh"))
              os << a << "=" << mesh.getAxisSize(a) << " ";
      };
      roles("tp");
      roles("pp");
      // A pipeline's stages by their layers.
      auto starts = plan.getAs<DenseI64ArrayAttr>("stages");
      auto model = m->getAttrOfType<DictionaryAttr>("graph.model");
      auto layers =
          model ? model.getAs<IntegerAttr>("n_layers") : IntegerAttr();
      if (starts && starts.size() > 1 && layers) {
        os << "(layers";
        for (int64_t i = 0, e = starts.size(); i < e; ++i) {
          int64_t end = i + 1 < e ? starts[i + 1] : layers.getInt();
          os << (i ? ", " : " ") << starts[i];
          if (end - 1 > starts[i])
            os << "-" << end - 1;
        }
        os << ") ";
      }
      auto seconds = plan.getAs<FloatAttr>("seconds_per_token");
      auto bytes = plan.getAs<IntegerAttr>("bytes_per_rank");
      os << llvm::formatv("predicted {0:f3} ms a token, ",
                          seconds ? 1e3 * seconds.getValueAsDouble() : 0.0)
         << formatBytes(bytes ? bytes.getInt() : 0) << " a rank";
      if (auto k = plan.getAs<IntegerAttr>("micro_batch"); k && k.getInt() > 0)
        os << ", prompts in micro-batches of " << k.getInt() << " tokens";
      options.onPlan(text);
    }
    // The graph phase chooses the cache's element type (--kv-cache).
    auto stageForward = m.lookupSymbol<func::FuncOp>(LLMC_FORWARD_FUNCTION);
    auto cache =
        llvm::cast<graph::KVCacheType>(stageForward.getArgumentTypes()[3]);
    auto params = collectParams(m);
    if (!params)
      return params.takeError();
    auto bytesAttr = m->getAttrOfType<IntegerAttr>("graph.weights_bytes");
    int64_t weightBytes = bytesAttr ? bytesAttr.getInt() : 0;
    int64_t decodeBytes = decodeReadBytes(m, *params);
    ComputeCount compute = countCompute(m);

    auto file = [&](llvm::StringRef name) {
      llvm::SmallString<256> p(dir);
      llvm::sys::path::append(p, name);
      return p;
    };

    // A sharded model: a weight blob per rank of the mesh (row-major
    // positions), each with the rank's slices.
    auto meshes = llvm::to_vector(m.getOps<dist::MeshOp>());
    int64_t ranks = 1;
    if (meshes.size() > 1)
      return llvm::createStringError("the module has more than one dist.mesh");
    if (meshes.empty()) {
      if (auto e = writeWeights(*params, weightBytes, file("weights.bin"),
                                options.onWeightsProgress))
        return e;
    } else {
      dist::MeshOp mesh = meshes.front();
      ranks = mesh.getNumRanks();
      MeshPlace place;
      for (llvm::StringRef a : mesh.getAxes().getAsValueRange<StringAttr>())
        place.axes.push_back(a.str());
      place.shape.assign(mesh.getShape().begin(), mesh.getShape().end());
      // (A pipeline stage's blobs: the ranks at its position along the
      // plan's pp axes.)
      llvm::SmallVector<int64_t> ppAxes;
      if (auto plan = m->getAttrOfType<DictionaryAttr>("dist.plan"))
        if (auto pp = plan.getAs<ArrayAttr>("pp"))
          for (llvm::StringRef a : pp.getAsValueRange<StringAttr>())
            ppAxes.push_back(mesh.getAxisIndex(a));
      for (int64_t r = 0; r < ranks; ++r) {
        place.position.assign(place.shape.size(), 0);
        for (int64_t i = place.shape.size() - 1, left = r; i >= 0; --i) {
          place.position[i] = left % place.shape[i];
          left /= place.shape[i];
        }
        int64_t rankStage = 0;
        for (int64_t a : ppAxes)
          rankStage = rankStage * place.shape[a] + place.position[a];
        if (stages > 1 && rankStage != stage)
          continue;
        if (auto e =
                writeWeights(*params, weightBytes, file(weightsFileOfRank(r)),
                             options.onWeightsProgress, &place))
          return e;
      }
    }
    phaseDone(
        "weights",
        std::to_string(weightBytes) + " bytes" +
            (ranks > 1 ? " a rank, " + std::to_string(ranks) + " ranks" : ""));
    auto dumpIR = [&](llvm::StringRef name) {
      if (!options.keepIR)
        return;
      std::error_code ec;
      llvm::raw_fd_ostream os(file(name), ec);
      if (!ec)
        m.print(os);
    };
    dumpIR("graph.mlir");
    PassManager tlPM(ctx);
    buildTLPhase(tlPM, pipeline);
    if (failed(tlPM.run(m)))
      return llvm::createStringError("the tl phase failed");
    phaseDone("tl");
    dumpIR("tl.mlir");
    PassManager lowerPM(ctx);
    LoweringOptions lowering;
    lowering.profile = pipeline.profile;
    (*backend)->buildLowering(lowerPM, lowering);
    if (failed(lowerPM.run(m)))
      return llvm::createStringError("lowering to " + (*backend)->name().str() +
                                     " failed");
    phaseDone("lowering", (*backend)->name());
    dumpIR("lowered.mlir");
    auto arena = entryArena(m);
    if (!arena)
      return arena.takeError();
    if (options.onMemory)
      options.onMemory(describeMemory(*arena, cache));
    std::vector<KernelWork> kernels = kernelWork(m);
    auto library = (*backend)->emit(m, dir);
    if (!library)
      return library.takeError();
    phaseDone("codegen");
    llvm::StringRef tokenizerKind, tokenizerFile;
    if (llama2cTokenizer) {
      tokenizerKind = "llama2c";
      tokenizerFile = "tokenizer.bin";
      if (auto ec =
              llvm::sys::fs::copy_file(options.tokenizer, file(tokenizerFile)))
        return fileError(options.tokenizer, "cannot copy: " + ec.message());
    } else if (tokenizer) {
      tokenizerKind = "llmc";
      tokenizerFile = "tokenizer.json";
      if (auto e = writeTokenizer(*tokenizer, file(tokenizerFile)))
        return e;
    }
    if (auto e = writeMetadata(
            file("metadata.json"), m, cache, *params, weightBytes, decodeBytes,
            compute, *arena, kernels, options.pipeline.profile, **backend,
            *library, tokenizerKind, tokenizerFile, stage == 0 ? stages : 0))
      return e;
    if (!tokenizerKind.empty())
      tokenizerNote = "tokenizer: " + tokenizerKind.str();
  }
  if (auto e = moveIntoPlace(tmp, outDir))
    return e;
  phaseDone("write", tokenizerNote);
  done = true;
  return llvm::Error::success();
}
