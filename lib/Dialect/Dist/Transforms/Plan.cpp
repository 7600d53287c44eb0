//===- Plan.cpp - a sharding plan chosen by a cost model ------------------===//
//
// See the pass description (Passes.td). The model's facts (layers, heads,
// the weights each product reads, the KV cache) come from the graph; each
// assignment of roles (tp, pp) to the mesh's axes is costed per decoded
// token, and the cheapest that fits becomes annotations for dist-propagate.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Dist/Transforms/Passes.h"
#include "Dialect/Graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace llmc::dist {
#define GEN_PASS_DEF_DISTPLAN
#include "Dialect/Dist/Transforms/Passes.h.inc"
} // namespace llmc::dist

using namespace mlir;
using namespace llmc;
using namespace llmc::dist;

namespace {

/// One host's shared memory, as MPI moves data through it.
constexpr double kDefaultBandwidth = 1.0e10;
constexpr double kDefaultLatency = 5.0e-6;
/// The prompt a pipeline's micro-batch is chosen for (llama-bench's pp512).
constexpr int64_t kPromptTokens = 512;

/// What the cost model needs to know of a model.
struct ModelFacts {
  func::FuncOp func;
  int64_t layers = 0, heads = 0, kvHeads = 0, hidden = 0, vocab = 0, ffn = 0;
  double layerBytes = 0, headBytes = 0, tableBytes = 0, kvBytes = 0;
  /// A token's FLOPs in the layers' products.
  double layerFlops = 0;
  bool tied = false;
  /// The products split by their output columns (Q, K, V, gate, up).
  SmallVector<graph::MatmulOp> columnProducts;
  graph::EmbeddingOp embedding;
  graph::MatmulOp head;
};

/// The product `v` comes from, through RoPE, reshapes, a bias add and a
/// per-head norm (Qwen3's q and k norms).
graph::MatmulOp productOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto mm = dyn_cast<graph::MatmulOp>(def))
      return mm;
    if (isa<graph::RopeOp, graph::ReshapeOp, graph::RMSNormOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    if (auto add = dyn_cast<graph::AddOp>(def)) {
      if (graph::MatmulOp mm = productOf(add.getLhs()))
        return mm;
      v = add.getRhs();
      continue;
    }
    return {};
  }
  return {};
}

double bytesOf(Value v) {
  return static_cast<double>(
      graph::storageBytes(cast<RankedTensorType>(v.getType())));
}

/// A token's FLOPs in `mm`: a multiply-add per weight element.
double flopsOf(graph::MatmulOp mm) {
  return 2.0 *
         cast<RankedTensorType>(mm.getWeight().getType()).getNumElements();
}

ModelFacts factsOf(func::FuncOp func) {
  ModelFacts m;
  m.func = func;
  llvm::SetVector<Operation *> columns;
  auto column = [&](Value v) {
    if (graph::MatmulOp mm = productOf(v))
      columns.insert(mm);
  };
  // The MLP's gate and up: their width is the FFN's.
  auto mlpColumn = [&](Value v) {
    if (graph::MatmulOp mm = productOf(v)) {
      columns.insert(mm);
      m.ffn =
          std::max<int64_t>(m.ffn, mm.getResult().getType().getShape().back());
    }
  };
  func.walk([&](Operation *op) {
    if (auto attn = dyn_cast<graph::AttentionOp>(op)) {
      ++m.layers;
      m.heads = attn.getNumHeads();
      m.kvHeads = attn.getNumKvHeads();
      for (Value v : {attn.getQ(), attn.getK(), attn.getV()})
        column(v);
    } else if (auto ew = dyn_cast<graph::ElementwiseOp>(op)) {
      // The MLP's silu(gate) * up, fused.
      if (!ew.getBody().getOps<graph::SiluOp>().empty())
        for (Value v : ew.getInputs())
          mlpColumn(v);
    } else if (auto mul = dyn_cast<graph::MulOp>(op)) {
      if (mul->getParentOfType<graph::ElementwiseOp>())
        return;
      for (Value v : {mul.getLhs(), mul.getRhs()}) {
        if (auto silu = v.getDefiningOp<graph::SiluOp>())
          v = silu.getInput();
        mlpColumn(v);
      }
    } else if (auto emb = dyn_cast<graph::EmbeddingOp>(op)) {
      m.embedding = emb;
    }
  });
  for (Operation *op : columns)
    m.columnProducts.push_back(cast<graph::MatmulOp>(op));
  if (m.embedding) {
    auto table = cast<RankedTensorType>(m.embedding.getTable().getType());
    m.vocab = table.getDimSize(0);
    m.hidden = table.getDimSize(1);
    m.tableBytes = bytesOf(m.embedding.getTable());
  }
  func.walk([&](graph::MatmulOp mm) {
    bool isColumn = llvm::is_contained(m.columnProducts, mm);
    if (!isColumn && m.vocab &&
        mm.getResult().getType().getShape().back() == m.vocab && !m.head) {
      m.head = mm;
      m.headBytes = bytesOf(mm.getWeight());
      // Tied: the head reads the table's parameter (one value, or a param
      // of the same name).
      auto name = [](Value v) {
        auto param = v.getDefiningOp<graph::ParamOp>();
        return param ? param.getName() : StringRef();
      };
      m.tied = m.embedding &&
               (mm.getWeight() == m.embedding.getTable() ||
                (!name(mm.getWeight()).empty() &&
                 name(mm.getWeight()) == name(m.embedding.getTable())));
      return;
    }
    m.layerBytes += bytesOf(mm.getWeight());
    m.layerFlops += flopsOf(mm);
  });
  for (Type t : func.getArgumentTypes())
    if (auto cache = dyn_cast<graph::KVCacheType>(t))
      m.kvBytes += 2.0 * cache.getLayers() * cache.getMaxSeq() *
                   cache.getKvHeads() * cache.getHeadDim() *
                   cache.getElementType().getIntOrFloatBitWidth() / 8;
  return m;
}

/// A link's cost: bytes a second and seconds a message.
struct Link {
  double bandwidth = kDefaultBandwidth, latency = kDefaultLatency;
};

/// One assignment of roles to the mesh's axes, and its cost.
struct Candidate {
  SmallVector<bool> tensorParallel; // per axis: tp, else pp
  int64_t t = 1, p = 1;
  Link tpLink, ppLink;
  double compute = 0, communication = 0, bytesPerRank = 0;
  /// A pipeline's micro-batch (0: whole prompts) and the predicted time of
  /// a kPromptTokens prompt.
  int64_t microBatch = 0;
  double promptSeconds = 0;
  std::string why; // why it does not apply (empty: it does)
  double seconds() const { return compute + communication; }
  std::string name(ArrayRef<int64_t> shape) const {
    std::string s;
    for (auto [i, size] : llvm::enumerate(shape))
      s += (i ? " " : "") + std::string(tensorParallel[i] ? "tp" : "pp") + "=" +
           std::to_string(size);
    return s;
  }
};

/// The slowest of `links` (the least bandwidth, the most latency).
Link slowest(ArrayRef<Link> links) {
  Link out{std::numeric_limits<double>::infinity(), 0};
  for (const Link &l : links) {
    out.bandwidth = std::min(out.bandwidth, l.bandwidth);
    out.latency = std::max(out.latency, l.latency);
  }
  return links.empty() ? Link() : out;
}

double allReduce(int64_t n, double bytes, const Link &l) {
  if (n <= 1)
    return 0;
  return 2.0 * (n - 1) / n * bytes / l.bandwidth + 2.0 * (n - 1) * l.latency;
}

double allGather(int64_t n, double bytes, const Link &l) {
  if (n <= 1)
    return 0;
  return 1.0 * (n - 1) / n * bytes / l.bandwidth + 1.0 * (n - 1) * l.latency;
}

void cost(Candidate &c, const ModelFacts &m, const PlanOptions &o) {
  const double memoryBandwidth = o.memoryBandwidth, memoryLimit = o.memory;
  int64_t t = c.t, p = c.p;
  auto divides = [&](int64_t what, StringRef name) {
    if (c.why.empty() && what % t != 0)
      c.why = (name + " (" + Twine(what) + ") do not divide over " + Twine(t) +
               " tensor-parallel ranks")
                  .str();
  };
  divides(m.heads, "the heads");
  divides(m.kvHeads, "the KV heads");
  divides(m.ffn, "the FFN columns");
  divides(m.vocab, "the vocabulary rows");
  if (c.why.empty() && p > m.layers)
    c.why =
        ("more stages (" + Twine(p) + ") than layers (" + Twine(m.layers) + ")")
            .str();
  double row = 4.0 * m.hidden; // one token's hidden row, f32
  c.compute = (m.layerBytes + m.headBytes) / t / memoryBandwidth;
  if (t > 1)
    c.communication += 2.0 * m.layers * allReduce(t, row, c.tpLink) +
                       allReduce(t, row, c.tpLink) +
                       allGather(t, 4.0 * m.vocab, c.tpLink);
  if (p > 1)
    c.communication += (p - 1) * (c.ppLink.latency + row / c.ppLink.bandwidth) +
                       c.ppLink.latency + 4.0 / c.ppLink.bandwidth;
  // The worst stage holds a share of the layers and, with one stage, both
  // the table and the head.
  double ends = m.tied ? m.tableBytes
                       : (p > 1 ? std::max(m.tableBytes, m.headBytes)
                                : m.tableBytes + m.headBytes);
  // The largest stage's layers (stage s starts at layer s * L / p).
  double share = p > 1 ? std::ceil(double(m.layers) / p) / m.layers : 1.0;
  c.bytesPerRank = m.layerBytes * share / t + ends / t + m.kvBytes * share / t;
  if (c.why.empty() && memoryLimit > 0 && c.bytesPerRank > memoryLimit)
    c.why =
        ("needs " + Twine(static_cast<int64_t>(c.bytesPerRank)) +
         " bytes a rank, more than " + Twine(static_cast<int64_t>(memoryLimit)))
            .str();

  // A prompt: the largest stage's time for k tokens, its weights read once
  // a call (and unpacked: not hidden behind the arithmetic); the stages
  // work on successive pieces at once. The head runs on the last row alone.
  double layersShare = share * m.layers;
  auto stage = [&](int64_t k) {
    double s = k * m.layerFlops * share / t / o.flops +
               m.layerBytes * share / t / memoryBandwidth;
    if (t > 1)
      s += 2.0 * layersShare * allReduce(t, k * row, c.tpLink);
    if (p > 1)
      s += c.ppLink.latency + k * row / c.ppLink.bandwidth;
    return s;
  };
  auto prompt = [&](int64_t k) {
    k = std::min(k, kPromptTokens);
    return double((kPromptTokens + k - 1) / k + p - 1) * stage(k);
  };
  c.microBatch = p > 1 ? o.microBatch : 0;
  if (c.microBatch < 0) {
    int64_t best = kPromptTokens;
    for (int64_t k = 8; k < kPromptTokens; k *= 2)
      if (prompt(k) < prompt(best))
        best = k;
    c.microBatch = best < kPromptTokens ? best : 0;
  }
  c.promptSeconds = prompt(c.microBatch > 0 ? c.microBatch : kPromptTokens);
}

static void annotate(ModuleOp module, ModelFacts &m, const Candidate &c,
                     ArrayRef<int64_t> shape, ArrayRef<double> bandwidths,
                     ArrayRef<double> latencies) {
  MLIRContext *ctx = module.getContext();
  Builder b(ctx);
  // Axes named by role ("tp", "pp"; "tp1" for a second tp axis).
  SmallVector<Attribute> names, links;
  SmallVector<Attribute> tpAxes, ppAxes;
  for (auto [i, size] : llvm::enumerate(shape)) {
    bool tp = c.tensorParallel[i];
    SmallVector<Attribute> &same = tp ? tpAxes : ppAxes;
    std::string name = std::string(tp ? "tp" : "pp") +
                       (same.empty() ? "" : std::to_string(same.size()));
    same.push_back(b.getStringAttr(name));
    names.push_back(b.getStringAttr(name));
    links.push_back(LinkAttr::get(ctx, b.getF64FloatAttr(bandwidths[i]),
                                  b.getF64FloatAttr(latencies[i])));
  }
  OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
  MeshOp::create(mb, module.getLoc(), "mesh", shape, b.getArrayAttr(names),
                 b.getArrayAttr(links));
  auto meshRef = FlatSymbolRefAttr::get(ctx, "mesh");
  if (c.t > 1) {
    auto byRows = ShardingAttr::get(
        ctx, meshRef,
        b.getArrayAttr({b.getArrayAttr(tpAxes), b.getArrayAttr({})}),
        ArrayAttr());
    auto shard = [&](OpOperand &use) {
      OpBuilder ob(use.getOwner());
      use.set(ShardOp::create(ob, use.get().getLoc(), use.get(), byRows));
    };
    for (graph::MatmulOp mm : m.columnProducts)
      shard(mm.getWeightMutable());
    if (m.embedding)
      shard(m.embedding.getTableMutable());
    if (m.head)
      shard(m.head.getWeightMutable());
  }
  SmallVector<int64_t> stages;
  for (int64_t s = 0; s < c.p; ++s)
    stages.push_back(s * m.layers / c.p);
  module->setAttr(
      "dist.plan",
      b.getDictionaryAttr({
          b.getNamedAttr("tp", b.getArrayAttr(tpAxes)),
          b.getNamedAttr("pp", b.getArrayAttr(ppAxes)),
          b.getNamedAttr("stages", b.getDenseI64ArrayAttr(stages)),
          b.getNamedAttr("seconds_per_token", b.getF64FloatAttr(c.seconds())),
          b.getNamedAttr("micro_batch", b.getI64IntegerAttr(c.microBatch)),
          b.getNamedAttr("prompt_seconds", b.getF64FloatAttr(c.promptSeconds)),
          b.getNamedAttr(
              "bytes_per_rank",
              b.getI64IntegerAttr(static_cast<int64_t>(c.bytesPerRank))),
      }));
}

} // namespace

LogicalResult llmc::dist::planModule(ModuleOp module,
                                     const PlanOptions &options,
                                     llvm::raw_ostream *report) {
  const std::string &mesh = options.mesh;
  ArrayRef<double> bandwidth = options.bandwidth, latency = options.latency;
  double memoryBandwidth = options.memoryBandwidth, memory = options.memory;
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  StringRef(mesh).split(parts, 'x');
  for (StringRef part : parts) {
    int64_t n = 0;
    if (part.getAsInteger(10, n) || n < 1) {
      mlir::emitError(module.getLoc())
          << "dist-plan: bad mesh '" << mesh
          << "' (expected ranks per axis, e.g. 2, 4, 2x2)";
      return failure();
    }
    shape.push_back(n);
  }
  auto perAxis = [&](ArrayRef<double> values, StringRef what,
                     SmallVectorImpl<double> &out, double fallback) {
    if (values.size() > 1 && values.size() != shape.size()) {
      mlir::emitError(module.getLoc())
          << "dist-plan: " << values.size() << " " << what << " values for "
          << shape.size() << " mesh axes";
      return failure();
    }
    for (size_t i = 0; i < shape.size(); ++i)
      out.push_back(values.empty() ? fallback
                                   : values[values.size() == 1 ? 0 : i]);
    return success();
  };
  SmallVector<double> bandwidths, latencies;
  if (failed(perAxis(bandwidth, "bandwidth", bandwidths, kDefaultBandwidth)) ||
      failed(perAxis(latency, "latency", latencies, kDefaultLatency)))
    return failure();
  auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (!llvm::all_of(bandwidths, positive) || !positive(memoryBandwidth) ||
      !llvm::all_of(latencies,
                    [](double v) { return std::isfinite(v) && v >= 0; }) ||
      !std::isfinite(memory) || memory < 0) {
    mlir::emitError(module.getLoc())
        << "dist-plan: bandwidths must be positive, latencies and the "
           "memory limit non-negative, all finite";
    return failure();
  }
  if (!positive(options.flops)) {
    mlir::emitError(module.getLoc())
        << "dist-plan: the FLOP rate must be positive and finite, got "
        << options.flops;
    return failure();
  }
  if (options.microBatch < -1) {
    mlir::emitError(module.getLoc())
        << "dist-plan: the micro-batch must be 0 or more tokens (-1: the "
           "cost model's choice), got "
        << options.microBatch;
    return failure();
  }
  if (module.lookupSymbol("mesh")) {
    mlir::emitError(module.getLoc(),
                    "dist-plan: the module already has a symbol @mesh");
    return failure();
  }
  func::FuncOp func;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isExternal() && !f.getOps<graph::AttentionOp>().empty()) {
      func = f;
      break;
    }
  if (!func) {
    mlir::emitError(module.getLoc(),
                    "dist-plan: no function with a decoder's attention");
    return failure();
  }
  ModelFacts m = factsOf(func);
  if (!options.roles.empty()) {
    if (options.roles.size() != shape.size() ||
        !llvm::all_of(options.roles, [](const std::string &r) {
          return r == "tp" || r == "pp";
        })) {
      mlir::emitError(module.getLoc())
          << "dist-plan: roles must name tp or pp for each of the mesh's "
          << shape.size() << " axes, got '" << llvm::join(options.roles, ",")
          << "'";
      return failure();
    }
    // A micro-batch is a pipeline's: given with roles that make none, it
    // would be dropped.
    if (options.microBatch >= 0 && !llvm::is_contained(options.roles, "pp")) {
      mlir::emitError(module.getLoc())
          << "dist-plan: a micro-batch of " << options.microBatch
          << " tokens, but the plan has no pipeline stages (roles '"
          << llvm::join(options.roles, ",") << "')";
      return failure();
    }
  }

  SmallVector<Candidate> candidates;
  unsigned axes = shape.size();
  for (unsigned roles = 0; roles < (1u << axes); ++roles) {
    Candidate c;
    SmallVector<Link> tpLinks, ppLinks;
    for (unsigned i = 0; i < axes; ++i) {
      bool tp = roles & (1u << i);
      c.tensorParallel.push_back(tp);
      (tp ? c.t : c.p) *= shape[i];
      (tp ? tpLinks : ppLinks).push_back({bandwidths[i], latencies[i]});
    }
    if (!options.roles.empty() &&
        llvm::any_of(llvm::seq(axes), [&](unsigned i) {
          return (options.roles[i] == "tp") != c.tensorParallel[i];
        }))
      continue;
    c.tpLink = slowest(tpLinks);
    c.ppLink = slowest(ppLinks);
    cost(c, m, options);
    candidates.push_back(std::move(c));
  }
  const Candidate *best = nullptr;
  for (const Candidate &c : candidates)
    if (c.why.empty() && (!best || c.seconds() < best->seconds()))
      best = &c;

  if (report) {
    *report << "dist-plan: @" << func.getSymName() << ", " << m.layers
            << " layers, " << m.heads << " heads, " << m.kvHeads
            << " KV heads, hidden " << m.hidden << ", FFN " << m.ffn
            << ", vocabulary " << m.vocab << "; mesh " << mesh << "\n";
    for (const Candidate &c : candidates) {
      *report << "  " << c.name(shape) << ": ";
      if (!c.why.empty()) {
        *report << "does not apply: " << c.why << "\n";
        continue;
      }
      *report << llvm::format(
          "%.3e s a token (compute %.3e, communication %.3e), %.0f bytes a "
          "rank; %.3e s a %lld-token prompt",
          c.seconds(), c.compute, c.communication, c.bytesPerRank,
          c.promptSeconds, static_cast<long long>(kPromptTokens));
      if (c.microBatch > 0)
        *report << " in micro-batches of " << c.microBatch;
      *report << "\n";
    }
    if (best)
      *report << "  chosen: " << best->name(shape) << "\n";
  }
  if (!best) {
    InFlightDiagnostic d = mlir::emitError(func.getLoc())
                           << "dist-plan: no plan for a mesh of " << mesh;
    for (const Candidate &c : candidates)
      d.attachNote() << c.name(shape) << ": " << c.why;
    return failure();
  }
  annotate(module, m, *best, shape, bandwidths, latencies);
  return success();
}

namespace {

struct DistPlanPass : llmc::dist::impl::DistPlanBase<DistPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    PlanOptions options;
    options.mesh = mesh;
    options.bandwidth.assign(bandwidth.begin(), bandwidth.end());
    options.latency.assign(latency.begin(), latency.end());
    options.memoryBandwidth = memoryBandwidth;
    options.memory = memory;
    options.flops = flops;
    options.microBatch = microBatch;
    options.roles.assign(roles.begin(), roles.end());
    if (failed(planModule(getOperation(), options,
                          print ? &llvm::errs() : nullptr)))
      signalPassFailure();
  }
};

} // namespace
