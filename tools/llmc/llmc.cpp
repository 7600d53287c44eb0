//===- llmc.cpp - the llmc command-line driver -----------------------------===//
//
//   llmc compile MODEL [--tokenizer FILE] [--target T] [--max-seq-len N]
//                [--act-quant M] [--keep-ir] -o DIR
//   llmc run DIR --prompt TEXT --max-tokens N [sampling options]
//   llmc bench DIR
//   llmc tokenize FILE|DIR [--text T | --input F | --ids F] [...]
//
// `compile` is the only subcommand that needs MLIR; `run` and `bench` use the
// runtime alone (tools/llmc/RunCommand.cpp, BenchCommand.cpp).
//
//===----------------------------------------------------------------------===//
#include "Commands.h"

#include <cstdlib>

#include "Artifact/Artifact.h"
#include "Dialect/Dist/Transforms/Passes.h"
#include "Import/GGUF.h"
#include "Import/Import.h"
#include "Import/Tokenizer.h"
#include "Transforms/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <chrono>
#include <cmath>
#include <string>

using namespace llvm;

static int fail(const Twine &message) {
  errs() << "llmc: error: " << message << "\n";
  return 1;
}

static void usage(raw_ostream &os) {
  os << "usage:\n"
        "  llmc compile MODEL [--tokenizer FILE] [--target T] "
        "[--max-seq-len N] [--act-quant exact|llama.cpp] [--kv-cache f32|f16] "
        "[--keep-ir] [--profile] [--tune FILE|none] "
        "[--mesh 2|4|2x2...] [--shard-plan FILE] -o DIR\n"
        "      MODEL: a llama2.c checkpoint, a Hugging Face directory "
        "(config.json + safetensors) or a graph-dialect .mlir file\n"
        "      --tokenizer: a llama2.c tokenizer.bin, tokenizer.json, "
        "tokenizer.model, GGUF, or none\n"
        "      (default: the model's own: GGUF metadata, the directory's "
        "tokenizer.model/tokenizer.json)\n"
        "      --target: cpu (this host, default), cpu:NAME[,+feat|-feat]...\n"
        "      [,cores=N,l1d=SIZE,l2=SIZE,l3=SIZE,prefetch=SIZE,"
        "prefetch_level=N]\n"
        "      (e.g. cpu:znver4, cpu:x86-64-v3,+avxvnni);\n"
        "      vulkan (this machine's device), vulkan[:1.2|1.3][,...], cuda "
        "(this\n"
        "      machine's), cuda:sm_NN[,+feat|-feat...][,cores=N] (GPU "
        "features:\n"
        "      fp16, int8, fp64, int64, mma, pdl, async-copy, cublas; e.g. "
        "cuda:sm_90,+cublas);\n"
        "      docs/design.md, Targets\n"
        "      --act-quant llama.cpp: round matmul activations to the "
        "weight's\n"
        "      kind as llama.cpp's CPU backend does (int8 dot products for\n"
        "      quantized weights); exact (default): f32 math\n"
        "      --kv-cache f16: keys and values stored in f16 (half the "
        "memory,\n"
        "      llama.cpp's default); f32 (default)\n"
        "      --profile: time every kernel call (llmc bench --profile)\n"
        "      --mesh: shard over a mesh of ranks (run under mpirun), by the "
        "cost\n"
        "      model's plan (as llmc plan prints); --shard-plan FILE: a "
        "given plan\n"
        "      (JSON: mesh, roles, optional bandwidth, latency, "
        "memory_bandwidth,\n"
        "      flops, micro_batch)\n"
        "      --tune FILE|none: the schedule choices `llmc tune` measured\n"
        "      (default: $LLMC_TUNE_CACHE, else ~/.cache/llmc/tune.json)\n"
        "  llmc run DIR|MODEL [--act-quant M] [--kv-cache K] --prompt TEXT "
        "--max-tokens N "
        "[--temperature T] "
        "[--top-k K] [--top-p P] [--seed S] [--threads N] "
        "[--micro-batch N] "
        "[--dump-logits FILE.npy]\n"
        "  llmc bench DIR|MODEL [-p N] [-n N] [-t T[,T...]] [-r R] "
        "[--vs PATH|npm|none]... [--roofline] [--profile] [--act-quant M] "
        "[--kv-cache K] [--target T] [--device N] [-ub N]\n"
        "  llmc plan MODEL [--mesh 2|4|2x2...] [--bandwidth B[,B]] "
        "[--latency S[,S]] [--memory-bandwidth B] [--memory BYTES] "
        "[--flops F] "
        "[--target T] [--act-quant M] [--kv-cache K] [--max-seq-len N]\n"
        "      how dist-plan would shard MODEL over a mesh: each candidate "
        "(tp or pp\n"
        "      per axis) with its predicted time per decoded token and bytes "
        "a rank,\n"
        "      a 512-token prompt's predicted time (a pipeline's in "
        "micro-batches),\n"
        "      and the chosen one (links in bytes/s and s per axis; "
        "docs/design.md,\n"
        "      Distribution)\n"
        "  llmc tune MODEL [--act-quant M] [--kv-cache K] [--target T] [-p N] "
        "[-n N] "
        "[-t T] [-r R] [-o FILE]\n"
        "  llmc inspect FILE   (GGUF, safetensors, Hugging Face dir, "
        "llama2.c)\n"
        "  llmc tokenize FILE|DIR [--text T | --input STRINGS.json | --ids "
        "IDS.json] [--specials] [--add-special] [--decode]\n"
        "  llmc devices        (the Vulkan and CUDA devices; LLMC_DEVICE=N "
        "picks one of an artifact's kind)\n";
}

/// The graph module of `model`: a graph-dialect .mlir file, or a model file
/// imported.
static llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
loadModel(mlir::MLIRContext &ctx, llvm::SourceMgr &sourceMgr,
          const std::string &model, const llmc::ImportOptions &importOptions) {
  if (StringRef(model).ends_with(".mlir")) {
    auto module = mlir::parseSourceFile<mlir::ModuleOp>(
        model, sourceMgr, mlir::ParserConfig(&ctx));
    if (!module)
      return llvm::createStringError(model + ": cannot parse the graph module");
    return module;
  }
  return llmc::importModel(&ctx, model, importOptions);
}

/// Checks the numeric mode and the KV cache's type and resolves the target
/// into `pipeline` (the top of the pipeline: the target is described once,
/// here); the error message, or empty.
static std::string resolvePipeline(const std::string &targetSpec,
                                   llmc::PipelineOptions &pipeline) {
  if (pipeline.actQuant != "exact" && pipeline.actQuant != "llama.cpp")
    return "--act-quant: expected exact or llama.cpp, got '" +
           pipeline.actQuant + "'";
  if (!llmc::isKVCacheType(pipeline.kvCache))
    return "--kv-cache: expected f32 or f16, got '" + pipeline.kvCache + "'";
  auto resolved = llmc::resolveTarget(targetSpec);
  if (!resolved)
    return "--target: " + toString(resolved.takeError());
  pipeline.target = std::move(*resolved);
  return "";
}

/// A shard plan file (`llmc compile --shard-plan FILE`): JSON with the mesh
/// ("2", "2x2"), each axis's role ("tp" or "pp"), and optionally the links
/// (`bandwidth`, `latency`: a number or one per axis), `memory_bandwidth`
/// and `flops`, as `llmc plan` takes them, and a pipeline's `micro_batch`.
static llvm::Expected<llmc::dist::PlanOptions> readShardPlan(StringRef path) {
  auto bad = [&](const Twine &what) {
    return llvm::createStringError(path + ": " + what);
  };
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return bad("cannot read: " + buffer.getError().message());
  auto json = llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return bad("not JSON: " + toString(json.takeError()));
  const llvm::json::Object *o = json->getAsObject();
  if (!o)
    return bad("expected an object {\"mesh\": ..., \"roles\": [...]}");
  llmc::dist::PlanOptions plan;
  for (const auto &kv : *o)
    if (!llvm::is_contained({"mesh", "roles", "bandwidth", "latency",
                             "memory_bandwidth", "flops", "micro_batch"},
                            StringRef(kv.first)))
      return bad("unknown key '" + StringRef(kv.first) + "'");
  if (auto mesh = o->getString("mesh"))
    plan.mesh = mesh->str();
  else if (auto n = o->getInteger("mesh"))
    plan.mesh = std::to_string(*n);
  else
    return bad("'mesh' must be a string such as \"2x2\" or a number");
  const llvm::json::Array *roles = o->getArray("roles");
  if (!roles)
    return bad("'roles' must be a list of \"tp\" or \"pp\", one per axis");
  for (const llvm::json::Value &r : *roles) {
    auto s = r.getAsString();
    if (!s || (*s != "tp" && *s != "pp"))
      return bad("'roles' must be a list of \"tp\" or \"pp\", one per axis");
    plan.roles.push_back(s->str());
  }
  for (auto [key, out] : {std::pair{"bandwidth", &plan.bandwidth},
                          std::pair{"latency", &plan.latency}}) {
    const llvm::json::Value *v = o->get(key);
    if (!v)
      continue;
    if (auto n = v->getAsNumber()) {
      out->push_back(*n);
      continue;
    }
    const llvm::json::Array *list = v->getAsArray();
    if (!list)
      return bad("'" + Twine(key) + "' must be a number or a list of them");
    for (const llvm::json::Value &e : *list) {
      auto n = e.getAsNumber();
      if (!n)
        return bad("'" + Twine(key) + "' must be a number or a list of them");
      out->push_back(*n);
    }
  }
  for (auto [key, out] : {std::pair{"memory_bandwidth", &plan.memoryBandwidth},
                          std::pair{"flops", &plan.flops}}) {
    const llvm::json::Value *v = o->get(key);
    if (!v)
      continue;
    auto n = v->getAsNumber();
    if (!n || !(*n > 0) || !std::isfinite(*n))
      return bad("'" + Twine(key) + "' must be a positive number");
    *out = *n;
  }
  if (const llvm::json::Value *v = o->get("micro_batch")) {
    auto n = v->getAsInteger();
    if (!n || *n < 0)
      return bad("'micro_batch' must be a number of tokens (0: whole "
                 "prompts)");
    plan.microBatch = *n;
  }
  return plan;
}

static int compileMain(int argc, char **argv) {
  std::string model;
  llmc::ArtifactOptions options;
  llmc::ImportOptions importOptions;
  std::string maxSeq, targetSpec = "cpu";
  std::string tuneFile = llmc::defaultTuneCachePath();
  bool tuneGiven = false;
  std::string *actQuant = &options.pipeline.actQuant;
  std::string *kvCache = &options.pipeline.kvCache;
  std::string mesh, shardPlan;
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (arg.consume_front("--act-quant=")) {
      *actQuant = arg.str();
      continue;
    }
    if (arg.consume_front("--kv-cache=")) {
      *kvCache = arg.str();
      continue;
    }
    if (arg.consume_front("--target=")) {
      targetSpec = arg.str();
      continue;
    }
    if (arg.consume_front("--tune=")) {
      tuneFile = arg.str();
      tuneGiven = true;
      continue;
    }
    // Options that take a value, and where the value goes.
    std::string *target = llvm::StringSwitch<std::string *>(arg)
                              .Cases({"-o", "--output"}, &options.outDir)
                              .Case("--tokenizer", &options.tokenizer)
                              .Case("--target", &targetSpec)
                              .Case("--max-seq-len", &maxSeq)
                              .Case("--act-quant", actQuant)
                              .Case("--kv-cache", kvCache)
                              .Case("--tune", &tuneFile)
                              .Default(nullptr);
    if (target) {
      if (i + 1 >= argc)
        return fail("option " + arg + " needs a value");
      *target = argv[++i];
      tuneGiven |= target == &tuneFile;
      if (target == &maxSeq &&
          (StringRef(maxSeq).getAsInteger(10, importOptions.maxSeqLen) ||
           importOptions.maxSeqLen <= 0))
        return fail("--max-seq-len: expected a positive integer, got '" +
                    maxSeq + "'");
    } else if (arg == "--mesh" || arg == "--shard-plan") {
      if (i + 1 >= argc)
        return fail("option " + arg + " needs a value");
      (arg == "--mesh" ? mesh : shardPlan) = argv[++i];
    } else if (arg == "--keep-ir") {
      options.keepIR = true;
    } else if (arg == "--profile") {
      options.pipeline.profile = true;
    } else if (arg == "-h" || arg == "--help") {
      usage(outs());
      return 0;
    } else if (arg.starts_with("-")) {
      return fail("unknown option '" + arg + "' for llmc compile");
    } else if (model.empty()) {
      model = arg.str();
    } else {
      return fail("more than one model given ('" + model + "', '" + arg + "')");
    }
  }
  if (model.empty())
    return fail("llmc compile: no model given");
  if (options.outDir.empty())
    return fail("llmc compile: no output directory (-o DIR)");
  if (std::string error = resolvePipeline(targetSpec, options.pipeline);
      !error.empty())
    return fail(error);
  if (!shardPlan.empty()) {
    auto plan = readShardPlan(shardPlan);
    if (!plan)
      return fail(toString(plan.takeError()));
    if (!mesh.empty() && mesh != plan->mesh)
      return fail("--mesh " + mesh + " and the shard plan's mesh " +
                  plan->mesh + " (" + shardPlan + ") differ");
    options.pipeline.distribute = std::move(*plan);
  } else if (!mesh.empty()) {
    options.pipeline.distribute.emplace();
    options.pipeline.distribute->mesh = mesh;
  }
  options.onPlan = [](StringRef plan) {
    outs() << "llmc: plan: " << plan << "\n";
  };
  // What `llmc tune` measured on this target (the user's cache, or --tune
  // FILE; --tune none: the schedule's rules alone).
  if (tuneFile != "none") {
    if (tuneGiven && !llvm::sys::fs::exists(tuneFile))
      return fail("--tune: " + tuneFile + ": no such file");
    auto entries = llmc::readTuneCache(tuneFile);
    if (!entries)
      return fail(toString(entries.takeError()));
    options.pipeline.tuning =
        llmc::tuningFor(*entries, options.pipeline.target.str());
    if (!options.pipeline.tuning.empty())
      errs() << "llmc: tuning   " << options.pipeline.tuning.choices.size()
             << " schedule choices for this target from " << tuneFile << "\n";
  }

  mlir::DialectRegistry registry;
  llmc::registerLLMCDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // Located diagnostics: "file:line:col: error: ..." or the tensor name.
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagHandler(sourceMgr, &ctx, errs());

  // Each phase with its time on stderr; a progress line while weights are
  // written when stderr is a terminal.
  auto phaseStart = std::chrono::steady_clock::now();
  auto printPhase = [](StringRef phase, double seconds, StringRef detail) {
    errs() << llvm::formatv("llmc: {0,-9} {1,7:f2} s", phase, seconds);
    if (!detail.empty())
      errs() << "  (" << detail << ")";
    errs() << "\n";
  };
  options.onPhase = [&](StringRef phase, double seconds, StringRef detail) {
    if (errs().is_displayed())
      errs() << "\r\x1b[K"; // clears the progress line
    printPhase(phase, seconds, detail);
  };
  options.onMemory = [](StringRef memory) {
    errs() << "llmc: memory: " << memory << "\n";
  };
  if (errs().is_displayed()) {
    options.onWeightsProgress = [lastPercent = -1](uint64_t written,
                                                   uint64_t total) mutable {
      int percent = total ? static_cast<int>(100 * written / total) : 100;
      if (percent == lastPercent)
        return;
      lastPercent = percent;
      errs() << llvm::formatv("\rllmc: writing weights {0,3}% ({1} / {2} MB)",
                              percent, written >> 20, total >> 20);
    };
  }

  auto loaded = loadModel(ctx, sourceMgr, model, importOptions);
  if (!loaded)
    return fail(toString(loaded.takeError()));
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*loaded);
  printPhase("import",
             std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           phaseStart)
                 .count(),
             "");
  // The model's own tokenizer (GGUF metadata, a Hugging Face directory's
  // tokenizer.model / tokenizer.json) goes into the artifact unless one was
  // given; `--tokenizer none` leaves it out.
  if (options.tokenizer == "none")
    options.tokenizer.clear();
  else if (options.tokenizer.empty() && !StringRef(model).ends_with(".mlir"))
    options.tokenizer = llmc::findModelTokenizer(model);
  if (Error e = llmc::compileArtifact(*module, options))
    return fail(toString(std::move(e)));
  return 0;
}

/// Parses "1e9,2e9" into numbers.
static bool parseNumbers(StringRef text, SmallVectorImpl<double> &out) {
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  for (StringRef p : parts) {
    double v = 0;
    if (p.trim().getAsDouble(v))
      return false;
    out.push_back(v);
  }
  return true;
}

/// `llmc plan`: the graph phase of MODEL, then dist-plan's report.
static int planMain(int argc, char **argv) {
  std::string model, targetSpec = "cpu";
  llmc::PipelineOptions pipeline;
  llmc::ImportOptions importOptions;
  llmc::dist::PlanOptions plan;
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (arg == "-h" || arg == "--help") {
      usage(outs());
      return 0;
    }
    if (!arg.starts_with("-")) {
      if (!model.empty())
        return fail("more than one model given ('" + model + "', '" + arg +
                    "')");
      model = arg.str();
      continue;
    }
    static const char *const kValued[] = {
        "--mesh",     "--bandwidth",  "--latency", "--memory-bandwidth",
        "--memory",   "--flops",      "--target",  "--act-quant",
        "--kv-cache", "--max-seq-len"};
    if (!llvm::is_contained(kValued, arg))
      return fail("unknown option '" + arg + "' for llmc plan");
    if (i + 1 >= argc)
      return fail("option " + arg + " needs a value");
    StringRef value(argv[++i]);
    double number = 0;
    if (arg == "--mesh")
      plan.mesh = value.str();
    else if (arg == "--bandwidth" || arg == "--latency") {
      if (!parseNumbers(value,
                        arg == "--bandwidth" ? plan.bandwidth : plan.latency))
        return fail(arg + ": expected numbers separated by commas, got '" +
                    value + "'");
    } else if (arg == "--memory-bandwidth" || arg == "--memory" ||
               arg == "--flops") {
      if (value.getAsDouble(number))
        return fail(arg + ": expected a number, got '" + value + "'");
      (arg == "--memory"  ? plan.memory
       : arg == "--flops" ? plan.flops
                          : plan.memoryBandwidth) = number;
    } else if (arg == "--target")
      targetSpec = value.str();
    else if (arg == "--act-quant")
      pipeline.actQuant = value.str();
    else if (arg == "--kv-cache")
      pipeline.kvCache = value.str();
    else if (value.getAsInteger(10, importOptions.maxSeqLen) ||
             importOptions.maxSeqLen <= 0)
      return fail("--max-seq-len: expected a positive integer, got '" + value +
                  "'");
  }
  if (model.empty())
    return fail("llmc plan: no model given");
  if (std::string error = resolvePipeline(targetSpec, pipeline); !error.empty())
    return fail(error);

  mlir::DialectRegistry registry;
  llmc::registerLLMCDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagHandler(sourceMgr, &ctx, errs());
  auto loaded = loadModel(ctx, sourceMgr, model, importOptions);
  if (!loaded)
    return fail(toString(loaded.takeError()));
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*loaded);
  mlir::PassManager pm(&ctx);
  llmc::buildCompilePipeline(pm, pipeline, llmc::Phase::Graph);
  if (mlir::failed(pm.run(*module)))
    return fail(model + ": the graph phase failed");
  if (mlir::failed(llmc::dist::planModule(*module, plan, &outs())))
    return 1;
  return 0;
}

static const char *dtypeName(llmc::DType t) {
  switch (t) {
  case llmc::DType::F32: return "F32";
  case llmc::DType::F16: return "F16";
  case llmc::DType::BF16: return "BF16";
  case llmc::DType::Q8_0: return "Q8_0";
  case llmc::DType::Q4_0: return "Q4_0";
  case llmc::DType::Q6_K: return "Q6_K";
  case llmc::DType::Q4_K: return "Q4_K";
  }
  return "?";
}

/// Prints a tensor table sorted by name: name, type, shape, bytes.
static void printTensors(const llmc::WeightTable &weights) {
  std::vector<std::string> names;
  for (const auto &entry : weights)
    names.push_back(entry.first().str());
  llvm::sort(names);
  outs() << "tensors: " << names.size() << "\n";
  for (const std::string &n : names) {
    const llmc::TensorSource &t = weights.lookup(n);
    int64_t elements = 1;
    std::string shape;
    for (int64_t d : t.shape) {
      shape += (shape.empty() ? "" : "x") + std::to_string(d);
      elements *= d;
    }
    outs() << "  " << n << "  " << dtypeName(t.dtype) << "  [" << shape
           << "]  "
           << (t.dtype == llmc::DType::Q8_0   ? elements / 32 * 34
               : t.dtype == llmc::DType::Q4_0 ? elements / 32 * 18
               : t.dtype == llmc::DType::Q6_K ? elements / 256 * 210
               : t.dtype == llmc::DType::Q4_K ? elements / 256 * 144
               : elements * (t.dtype == llmc::DType::F32 ? 4 : 2))
           << " bytes\n";
  }
}

/// `llmc inspect FILE`: the metadata and tensors of a GGUF, safetensors,
/// Hugging Face directory or llama2.c file.
static int inspectMain(int argc, char **argv) {
  if (argc != 2)
    return fail("usage: llmc inspect FILE");
  StringRef path(argv[1]);
  if (!llvm::sys::fs::exists(path))
    return fail(path + ": no such file or directory");
  if (llmc::isGGUF(path) || path.ends_with(".gguf")) {
    auto file = llmc::gguf::read(path);
    if (!file)
      return fail(toString(file.takeError()));
    outs() << "format: GGUF v" << file->version << " (alignment "
           << file->alignment << ")\nmetadata: " << file->metadata.size()
           << "\n";
    for (const auto &[key, value] : file->metadata)
      outs() << "  " << key << " = " << value.str() << "\n";
    outs() << "tensors: " << file->tensors.size() << "\n";
    for (const llmc::gguf::TensorInfo &t : file->tensors) {
      std::string shape;
      for (auto it = t.ne.rbegin(); it != t.ne.rend(); ++it)
        shape += (shape.empty() ? "" : "x") + std::to_string(*it);
      outs() << "  " << t.name << "  " << *llmc::gguf::typeName(t.type)
             << "  [" << shape << "]  " << t.bytes << " bytes\n";
    }
    return 0;
  }
  llmc::WeightTable weights;
  if (llvm::sys::fs::is_directory(path)) {
    llmc::DecoderConfig config;
    if (Error e = llmc::readHuggingFace(path, config, weights))
      return fail(toString(std::move(e)));
    outs() << "format: Hugging Face " << config.arch << " (dim " << config.dim
           << ", " << config.layers << " layers, vocab " << config.vocab
           << ")\n";
  } else if (path.ends_with(".safetensors")) {
    if (Error e = llmc::readSafetensors(path, weights))
      return fail(toString(std::move(e)));
    outs() << "format: safetensors\n";
  } else {
    llmc::DecoderConfig config;
    if (Error e = llmc::readLlama2C(path, config, weights))
      return fail(toString(std::move(e)));
    outs() << "format: llama2.c (dim " << config.dim << ", hidden "
           << config.hiddenDim << ", " << config.layers << " layers, "
           << config.heads << " heads, " << config.kvHeads
           << " kv heads, vocab " << config.vocab << ", seq_len "
           << config.maxSeq << (config.tiedEmbeddings ? ", tied" : ", untied")
           << ")\n";
  }
  printTensors(weights);
  return 0;
}

/// The artifact cache: $LLMC_CACHE_DIR, else $XDG_CACHE_HOME/llmc, else
/// ~/.cache/llmc.
static std::string cacheRoot() {
  if (const char *dir = std::getenv("LLMC_CACHE_DIR"))
    return dir;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"))
    path = xdg;
  else if (const char *home = std::getenv("HOME"))
    llvm::sys::path::append(path, home, ".cache");
  else
    path = "/tmp";
  llvm::sys::path::append(path, "llmc");
  return path.str().str();
}

/// Hashes a model: a file's bytes, or every file of a directory (sorted by
/// name) with its name.
static llvm::Expected<uint64_t> hashModel(StringRef path) {
  std::vector<std::string> files;
  if (llvm::sys::fs::is_directory(path)) {
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::sys::fs::is_regular_file(it->path()))
        files.push_back(it->path());
    llvm::sort(files);
  } else {
    files.push_back(path.str());
  }
  uint64_t hash = 0x6c6c6d63; // "llmc"
  for (const std::string &f : files) {
    auto buffer = llvm::MemoryBuffer::getFile(f, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return llvm::createStringError(f + ": cannot read: " +
                                     buffer.getError().message());
    hash = llvm::hash_combine(hash, llvm::sys::path::filename(f),
                              llvm::xxh3_64bits((*buffer)->getBuffer()));
  }
  return hash;
}

/// `llmc run MODEL ...` where MODEL is a model rather than an artifact:
/// compiles it (once) into the cache, keyed by the model's contents and the
/// compile options, and returns the artifact directory.
static llvm::Expected<std::string>
cachedArtifact(StringRef model, const std::vector<std::string> &compileArgs) {
  auto hash = hashModel(model);
  if (!hash)
    return hash.takeError();
  uint64_t key = *hash;
  std::string target = "cpu";
  for (const std::string &a : compileArgs) {
    key = llvm::hash_combine(key, a);
    if (StringRef(a).starts_with("--target="))
      target = a.substr(strlen("--target="));
  }
  // What "cpu" means on this machine, and which compiler made the code: a
  // cache shared between machines or kept across llmc builds never hands
  // out code built for another CPU or by another compiler.
  auto resolved = llmc::resolveTarget(target);
  if (!resolved)
    return llvm::createStringError("--target: " +
                                   toString(resolved.takeError()));
  key = llvm::hash_combine(key, resolved->str());
  // The schedule choices the compilation would read (llmc tune).
  std::string tuneFile = llmc::defaultTuneCachePath();
  for (const std::string &a : compileArgs)
    if (StringRef(a).starts_with("--tune="))
      tuneFile = a.substr(strlen("--tune="));
  if (auto tuned = llvm::MemoryBuffer::getFile(tuneFile))
    key = llvm::hash_combine(key, (*tuned)->getBuffer());
  std::string self = llvm::sys::fs::getMainExecutable(
      "llmc", reinterpret_cast<void *>(&cacheRoot));
  llvm::sys::fs::file_status st;
  if (!llvm::sys::fs::status(self, st))
    key = llvm::hash_combine(key, st.getSize(),
                             st.getLastModificationTime().time_since_epoch().count());
  llvm::SmallString<256> dir(cacheRoot());
  llvm::sys::path::append(dir, llvm::formatv("{0:x-16}-cpu", key).str());
  llvm::SmallString<256> meta(dir);
  llvm::sys::path::append(meta, "metadata.json");
  if (llvm::sys::fs::exists(meta))
    return dir.str().str();
  if (auto ec = llvm::sys::fs::create_directories(cacheRoot()))
    return llvm::createStringError(cacheRoot() + ": cannot create: " +
                                   ec.message());
  // Compile in this process, as `llmc compile MODEL -o DIR` would.
  std::string modelStr = model.str(), dirStr = dir.str().str();
  std::vector<const char *> args = {"compile", modelStr.c_str(), "-o",
                                    dirStr.c_str()};
  for (const std::string &a : compileArgs)
    args.push_back(a.c_str());
  errs() << "llmc: compiling " << model << " into " << dir << "\n";
  if (compileMain(static_cast<int>(args.size()),
                  const_cast<char **>(args.data())) != 0)
    return llvm::createStringError("compilation of " + modelStr + " failed");
  return dirStr;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  if (argc < 2) {
    usage(errs());
    return 1;
  }
  StringRef cmd(argv[1]);
  if (cmd == "compile")
    return compileMain(argc - 1, argv + 1);
  if (cmd == "run" || cmd == "bench") {
    int (*sub)(int, char **) = cmd == "run" ? llmcRunMain : llmcBenchMain;
    // `run MODEL --target vulkan --device N`: the compilation describes the
    // device the run opens (LLMC_DEVICE, which --device sets).
    for (int i = 2; i + 1 < argc; ++i)
      if (StringRef(argv[i]) == "--device")
        ::setenv("LLMC_DEVICE", argv[i + 1], 1);
    // A model instead of an artifact: compile it into the cache first.
    if (argc > 2 && argv[2][0] != '-' && llvm::sys::fs::exists(argv[2])) {
      llvm::SmallString<256> meta(argv[2]);
      llvm::sys::path::append(meta, "metadata.json");
      if (!llvm::sys::fs::exists(meta)) {
        // Compile options go to the compilation; the rest to the command.
        std::vector<std::string> compileArgs;
        std::vector<char *> args = {argv[1], argv[2]};
        for (int i = 3; i < argc; ++i) {
          StringRef arg(argv[i]);
          if (arg.starts_with("--act-quant=") || arg.starts_with("--target=") ||
              arg.starts_with("--kv-cache=") || arg.starts_with("--tune=")) {
            compileArgs.push_back(arg.str());
          } else if (arg == "--profile" && cmd == "bench") {
            // Compiled with the counters, and shown by bench.
            compileArgs.push_back(arg.str());
            args.push_back(argv[i]);
          } else if (arg == "--act-quant" || arg == "--target" ||
                     arg == "--kv-cache" || arg == "--tune") {
            if (i + 1 >= argc)
              return fail("option " + arg + " needs a value");
            compileArgs.push_back((arg + "=" + StringRef(argv[++i])).str());
          } else {
            args.push_back(argv[i]);
          }
        }
        auto dir = cachedArtifact(argv[2], compileArgs);
        if (!dir)
          return fail(toString(dir.takeError()));
        args[1] = dir->data();
        // bench runs its peer on the model file itself.
        std::string modelFile = "--model-file=" + std::string(argv[2]);
        if (cmd == "bench")
          args.push_back(modelFile.data());
        return sub(static_cast<int>(args.size()), args.data());
      }
    }
    return sub(argc - 1, argv + 1);
  }
  if (cmd == "inspect")
    return inspectMain(argc - 1, argv + 1);
  if (cmd == "plan")
    return planMain(argc - 1, argv + 1);
  if (cmd == "tokenize")
    return llmcTokenizeMain(argc - 1, argv + 1);
  if (cmd == "tune")
    return llmcTuneMain(argc - 1, argv + 1);
  if (cmd == "devices")
    return llmcDevicesMain(argc - 1, argv + 1);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(outs());
    return 0;
  }
  usage(errs());
  return fail("unknown command '" + cmd + "'");
}
