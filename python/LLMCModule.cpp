//===- LLMCModule.cpp - Python bindings of llmc ----------------------------===//
//
// The native half of the `llmc` package: modules (import, parse, print,
// verify), pass managers with IR printing and timing, the tl schedule
// primitives, compilation to artifacts, and the runtime. MLIR diagnostics
// are collected while a call runs and raised as llmc.Error afterwards.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Schedule.h"
#include "Import/Import.h"
#include "Artifact/Artifact.h"
#include "Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/Timing.h"

#include "llmc/runtime.hpp"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <sstream>

namespace py = pybind11;
using namespace mlir;

namespace {

/// Raised for every compiler and runtime error.
struct LLMCError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One context for the whole process: modules from different calls can be
/// combined, and the dialects are loaded once.
std::shared_ptr<MLIRContext> sharedContext() {
  static std::shared_ptr<MLIRContext> ctx = [] {
    DialectRegistry registry;
    llmc::registerLLMCDialects(registry);
    llmc::registerLLMCPasses();
    auto c = std::make_shared<MLIRContext>(registry);
    c->loadAllAvailableDialects();
    c->disableMultithreading(); // Python drives one thing at a time.
    c->printOpOnDiagnostic(false);
    return c;
  }();
  return ctx;
}

/// "file:line:col", "tensor.name (file:line:col)" or MLIR's own form.
void printLoc(llvm::raw_ostream &os, Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getFilename().strref() << ":" << file.getLine() << ":"
       << file.getColumn();
  } else if (auto name = dyn_cast<NameLoc>(loc)) {
    os << name.getName().strref() << " (";
    printLoc(os, name.getChildLoc());
    os << ")";
  } else {
    os << loc;
  }
}

/// Collects the diagnostics emitted while it lives, as "loc: severity: msg".
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          llvm::raw_string_ostream os(text);
          printLoc(os, d.getLocation());
          os << ": "
             << (d.getSeverity() == DiagnosticSeverity::Error ? "error"
                 : d.getSeverity() == DiagnosticSeverity::Warning
                     ? "warning"
                     : "note")
             << ": " << d.str() << "\n";
          for (Diagnostic &note : d.getNotes()) {
            os << "  ";
            printLoc(os, note.getLocation());
            os << ": note: " << note.str() << "\n";
          }
          return success();
        }) {}
  /// Throws LLMCError with `what` and everything collected.
  [[noreturn]] void raise(const std::string &what) {
    throw LLMCError(text.empty() ? what : what + ":\n" + text);
  }
  const std::string &str() const { return text; }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

/// A module and the context that owns it.
struct PyModule {
  std::shared_ptr<MLIRContext> ctx;
  mutable OwningOpRef<ModuleOp> module;

  std::string str() const {
    std::string s;
    llvm::raw_string_ostream os(s);
    module->print(os);
    return s;
  }
  void verify() const {
    DiagnosticCollector diags(ctx.get());
    if (failed(mlir::verify(*module)))
      diags.raise("the module does not verify");
  }
  PyModule clone() const {
    return {ctx, OwningOpRef<ModuleOp>(cast<ModuleOp>((*module)->clone()))};
  }
};

PyModule parse(const std::string &text) {
  auto ctx = sharedContext();
  DiagnosticCollector diags(ctx.get());
  auto module = parseSourceString<ModuleOp>(text, ParserConfig(ctx.get()),
                                            "<string>");
  if (!module)
    diags.raise("cannot parse the module");
  return {ctx, std::move(module)};
}

PyModule importModel(const std::string &path, int64_t maxSeqLen) {
  auto ctx = sharedContext();
  DiagnosticCollector diags(ctx.get());
  llmc::ImportOptions options;
  options.maxSeqLen = maxSeqLen;
  auto module = llmc::importModel(ctx.get(), path, options);
  if (!module)
    throw LLMCError(llvm::toString(module.takeError()));
  return {ctx, std::move(*module)};
}

/// Calls `callback(pass_name, ir)` after every pass.
struct IRPrinter : PassInstrumentation {
  explicit IRPrinter(py::function callback) : callback(std::move(callback)) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    // Pass adaptors (nested pipelines) have no name and print nothing new.
    if (pass->getArgument().empty())
      return;
    std::string ir;
    llvm::raw_string_ostream os(ir);
    op->print(os);
    py::gil_scoped_acquire gil;
    callback(pass->getArgument().str(), ir);
  }
  py::function callback;
};

/// The resolved target `spec` (`cpu` is this host), or LLMCError.
llmc::TargetDescription resolveTargetOrThrow(const std::string &spec) {
  auto t = llmc::resolveTarget(spec);
  if (!t)
    throw LLMCError("target: " + llvm::toString(t.takeError()));
  return std::move(*t);
}

/// Schedule choices in the pass option's spelling (Target/Tuning.h).
static llmc::Tuning parseTuningOrThrow(const std::string &tuning) {
  auto t = llmc::Tuning::parse(tuning);
  if (!t)
    throw py::value_error(llvm::toString(t.takeError()));
  return *t;
}

static void checkKVCache(const std::string &kvCache) {
  if (!llmc::isKVCacheType(kvCache))
    throw py::value_error("kv_cache: expected 'f32' or 'f16', got '" +
                          kvCache + "'");
}

/// A pass pipeline, from a textual pipeline or a phase name.
struct PyPassManager {
  std::string pipeline;
  std::string target = "cpu";
  std::string actQuant = "exact";
  std::string kvCache = "f32";
  bool defaultSchedule = true;
  bool profile = false;
  std::string tuning;
  bool timing = false;
  py::object printAfter = py::none();
  std::string timingReport;

  void run(PyModule &m) {
    DiagnosticCollector diags(m.ctx.get());
    PassManager pm(m.ctx.get());
    std::string text = pipeline;
    if (auto phase = llmc::parsePhase(pipeline)) {
      // A phase name runs every phase up to it, as --compile-to does.
      llmc::PipelineOptions options;
      options.target = resolveTargetOrThrow(target);
      options.actQuant = actQuant;
      options.kvCache = kvCache;
      options.defaultSchedule = defaultSchedule;
      options.profile = profile;
      options.tuning = parseTuningOrThrow(tuning);
      llmc::buildCompilePipeline(pm, options, *phase);
    } else {
      std::string errors;
      llvm::raw_string_ostream es(errors);
      llvm::StringRef body = text;
      if (body.consume_front("builtin.module(") && body.consume_back(")"))
        text = body.str();
      if (failed(parsePassPipeline(text, pm, es)))
        throw LLMCError("invalid pass pipeline '" + pipeline + "': " + errors);
    }
    DefaultTimingManager tm;
    TimingScope root;
    if (timing) {
      tm.setEnabled(true);
      tm.setOutput(createOutputStrategy(
          DefaultTimingManager::OutputFormat::Text, timingStream));
      root = tm.getRootScope();
      pm.enableTiming(root);
    }
    if (!printAfter.is_none())
      pm.addInstrumentation(
          std::make_unique<IRPrinter>(printAfter.cast<py::function>()));
    LogicalResult result = pm.run(*m.module);
    if (timing) {
      root.stop();
      tm.print();
      timingReport = timingBuffer;
    }
    if (failed(result))
      diags.raise("pass pipeline '" + pipeline + "' failed");
  }

private:
  std::string timingBuffer;
  llvm::raw_string_ostream timingStream{timingBuffer};
};

//===----------------------------------------------------------------------===//
// Schedule handles
//===----------------------------------------------------------------------===//

/// A handle to a tl op inside a module. Primitives that replace loops
/// return fresh handles; old ones must not be reused.
struct OpHandle {
  std::shared_ptr<PyModule> owner;
  Operation *op;
  std::string loc() const {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << op->getLoc();
    return s;
  }
};

struct PySchedule {
  std::shared_ptr<PyModule> module;

  OpHandle getBlock(const std::string &name, const std::string &funcName) {
    DiagnosticCollector diags(module->ctx.get());
    Operation *root = module->module->getOperation();
    if (!funcName.empty()) {
      auto fn = SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
          root, StringAttr::get(module->ctx.get(), funcName));
      if (!fn)
        throw LLMCError("get_block: no function @" + funcName);
      root = fn;
    }
    auto block = llmc::tl::getBlock(root, name);
    if (failed(block))
      diags.raise("get_block('" + name + "')");
    return {module, *block};
  }
  std::vector<OpHandle> getLoops(const OpHandle &block) {
    return wrap(llmc::tl::getLoops(blockOf(block, "get_loops")));
  }
  static llmc::tl::BlockOp blockOf(const OpHandle &h, const char *what) {
    auto b = dyn_cast<llmc::tl::BlockOp>(h.op);
    if (!b)
      throw LLMCError(std::string(what) + ": the handle is not a tl.block");
    return b;
  }
  static llmc::tl::ForOp loop(const OpHandle &h, const char *what) {
    auto l = dyn_cast<llmc::tl::ForOp>(h.op);
    if (!l)
      throw LLMCError(std::string(what) + ": the handle is not a tl.for");
    return l;
  }
  static llvm::SmallVector<llmc::tl::ForOp>
  loopsOf(const std::vector<OpHandle> &hs, const char *what) {
    llvm::SmallVector<llmc::tl::ForOp> loops;
    for (const OpHandle &h : hs)
      loops.push_back(loop(h, what));
    return loops;
  }
  std::vector<OpHandle> wrap(llvm::ArrayRef<llmc::tl::ForOp> loops) {
    std::vector<OpHandle> r;
    for (llmc::tl::ForOp l : loops)
      r.push_back({module, l});
    return r;
  }
  std::vector<OpHandle> split(const OpHandle &h, std::vector<int64_t> factors) {
    DiagnosticCollector diags(module->ctx.get());
    IRRewriter rw(module->ctx.get());
    auto r = llmc::tl::split(rw, loop(h, "split"), factors);
    if (failed(r))
      diags.raise("split");
    return wrap(*r);
  }
  /// split with the remainder peeled off: (loops, tail or None).
  py::tuple splitPeel(const OpHandle &h, std::vector<int64_t> innerFactors) {
    DiagnosticCollector diags(module->ctx.get());
    IRRewriter rw(module->ctx.get());
    auto r = llmc::tl::splitPeel(rw, loop(h, "split"), innerFactors);
    if (failed(r))
      diags.raise("split");
    py::object tail = py::none();
    if (r->tail)
      tail = py::cast(OpHandle{module, r->tail});
    return py::make_tuple(wrap(r->loops), tail);
  }
  py::tuple rfactor(const OpHandle &block, const std::vector<OpHandle> &hs,
                    std::optional<OpHandle> root) {
    DiagnosticCollector diags(module->ctx.get());
    auto b = dyn_cast<llmc::tl::BlockOp>(block.op);
    if (!b)
      throw LLMCError("rfactor: the first handle is not a tl.block");
    llvm::SmallVector<llmc::tl::ForOp> loops = loopsOf(hs, "rfactor");
    llmc::tl::ForOp rootLoop;
    if (root)
      rootLoop = loopsOf({*root}, "rfactor").front();
    IRRewriter rw(module->ctx.get());
    auto r = llmc::tl::rfactor(rw, b, loops, rootLoop);
    if (failed(r))
      diags.raise("rfactor");
    return py::make_tuple(OpHandle{module, r->rf},
                          OpHandle{module, r->writeBack},
                          OpHandle{module, r->init});
  }
  OpHandle treeReduce(const OpHandle &block, int64_t segment) {
    DiagnosticCollector diags(module->ctx.get());
    llmc::tl::BlockOp b = blockOf(block, "tree_reduce");
    IRRewriter rw(module->ctx.get());
    auto r = llmc::tl::treeReduce(rw, b, segment);
    if (failed(r))
      diags.raise("tree_reduce");
    return {module, r->final};
  }
  void contract(const OpHandle &block) {
    DiagnosticCollector diags(module->ctx.get());
    llmc::tl::BlockOp b = blockOf(block, "contract");
    module->ctx->getOrLoadDialect<mlir::math::MathDialect>();
    IRRewriter rw(module->ctx.get());
    if (failed(llmc::tl::contract(rw, b)))
      diags.raise("contract");
  }
  void reverse(const OpHandle &h) {
    DiagnosticCollector diags(module->ctx.get());
    IRRewriter rw(module->ctx.get());
    if (failed(llmc::tl::reverse(rw, loop(h, "reverse"))))
      diags.raise("reverse");
  }
  std::vector<OpHandle> reorder(const std::vector<OpHandle> &hs) {
    DiagnosticCollector diags(module->ctx.get());
    IRRewriter rw(module->ctx.get());
    llvm::SmallVector<llmc::tl::ForOp> loops = loopsOf(hs, "reorder");
    auto r = llmc::tl::reorder(rw, loops);
    if (failed(r))
      diags.raise("reorder");
    return wrap(*r);
  }
  OpHandle fuse(const std::vector<OpHandle> &hs) {
    DiagnosticCollector diags(module->ctx.get());
    IRRewriter rw(module->ctx.get());
    llvm::SmallVector<llmc::tl::ForOp> loops = loopsOf(hs, "fuse");
    auto r = llmc::tl::fuse(rw, loops);
    if (failed(r))
      diags.raise("fuse");
    return {module, *r};
  }
  OpHandle fuseSiblings(const std::vector<OpHandle> &hs) {
    DiagnosticCollector diags(module->ctx.get());
    IRRewriter rw(module->ctx.get());
    llvm::SmallVector<llmc::tl::ForOp> loops = loopsOf(hs, "fuse_siblings");
    auto r = llmc::tl::fuseSiblings(rw, loops);
    if (failed(r))
      diags.raise("fuse_siblings");
    return {module, *r};
  }
  OpHandle fuseLaunches(const std::vector<OpHandle> &hs) {
    DiagnosticCollector diags(module->ctx.get());
    IRRewriter rw(module->ctx.get());
    llvm::SmallVector<llmc::tl::ForOp> nests = loopsOf(hs, "fuse_launches");
    auto r = llmc::tl::fuseLaunches(rw, nests);
    if (failed(r))
      diags.raise("fuse_launches");
    return {module, *r};
  }
  OpHandle decomposeReduction(const OpHandle &block, const OpHandle &l) {
    DiagnosticCollector diags(module->ctx.get());
    auto b = dyn_cast<llmc::tl::BlockOp>(block.op);
    if (!b)
      throw LLMCError("decompose_reduction: the first handle is not a "
                      "tl.block");
    IRRewriter rw(module->ctx.get());
    auto r = llmc::tl::decomposeReduction(rw, b, loop(l, "decompose_reduction"));
    if (failed(r))
      diags.raise("decompose_reduction");
    return {module, *r};
  }
  OpHandle computeAt(const OpHandle &block, const OpHandle &l) {
    DiagnosticCollector diags(module->ctx.get());
    auto b = dyn_cast<llmc::tl::BlockOp>(block.op);
    if (!b)
      throw LLMCError("compute_at: the first handle is not a tl.block");
    IRRewriter rw(module->ctx.get());
    auto r = llmc::tl::computeAt(rw, b, loop(l, "compute_at"));
    if (failed(r))
      diags.raise("compute_at");
    return {module, *r};
  }
  void reverseComputeInline(const OpHandle &block, bool intoReduction) {
    DiagnosticCollector diags(module->ctx.get());
    llmc::tl::BlockOp b = blockOf(block, "reverse_compute_inline");
    IRRewriter rw(module->ctx.get());
    if (failed(llmc::tl::reverseComputeInline(rw, b, /*quiet=*/false,
                                              intoReduction)))
      diags.raise("reverse_compute_inline");
  }
  std::vector<OpHandle> distribute(const OpHandle &l) {
    DiagnosticCollector diags(module->ctx.get());
    IRRewriter rw(module->ctx.get());
    auto r = llmc::tl::distribute(rw, loop(l, "distribute"));
    if (failed(r))
      diags.raise("distribute");
    return wrap(*r);
  }
  void expand(const OpHandle &block, unsigned write, const OpHandle &l) {
    DiagnosticCollector diags(module->ctx.get());
    llmc::tl::BlockOp b = blockOf(block, "expand");
    if (write >= b.getWrites().size())
      throw LLMCError("expand: the block has no write " + std::to_string(write));
    IRRewriter rw(module->ctx.get());
    if (failed(llmc::tl::expand(rw, b.getWrites()[write], loop(l, "expand"))))
      diags.raise("expand");
  }
  OpHandle hoist(const OpHandle &block, unsigned widening, const OpHandle &l) {
    DiagnosticCollector diags(module->ctx.get());
    llmc::tl::BlockOp b = blockOf(block, "hoist");
    auto widenings = llmc::tl::getWidenings(b);
    if (widening >= widenings.size())
      throw LLMCError("hoist: the block has no widening " +
                      std::to_string(widening));
    IRRewriter rw(module->ctx.get());
    auto r = llmc::tl::hoistValue(rw, b, widenings[widening]->getOperand(0),
                                  loop(l, "hoist"));
    if (failed(r))
      diags.raise("hoist");
    return {module, *r};
  }
  void computeInline(const OpHandle &block) {
    DiagnosticCollector diags(module->ctx.get());
    llmc::tl::BlockOp b = blockOf(block, "compute_inline");
    IRRewriter rw(module->ctx.get());
    if (failed(llmc::tl::computeInline(rw, b)))
      diags.raise("compute_inline");
  }
  template <typename Fn>
  OpHandle cache(const OpHandle &block, unsigned index, const char *what,
                 Fn fn) {
    DiagnosticCollector diags(module->ctx.get());
    llmc::tl::BlockOp b = blockOf(block, what);
    IRRewriter rw(module->ctx.get());
    auto r = fn(rw, b, index);
    if (failed(r))
      diags.raise(what);
    return {module, *r};
  }
  template <typename Fn>
  void mark(const OpHandle &h, const char *what, Fn fn) {
    DiagnosticCollector diags(module->ctx.get());
    if (failed(fn(loop(h, what))))
      diags.raise(what);
  }
};

//===----------------------------------------------------------------------===//
// Runtime
//===----------------------------------------------------------------------===//

struct PyRuntime {
  std::unique_ptr<llmc::Model> model;
  std::string dir;

  PyRuntime(const std::string &dir, int32_t threads) : dir(dir) {
    try {
      model = std::make_unique<llmc::Model>(llmc::Model::open(dir));
      if (threads)
        model->setThreads(threads);
    } catch (const std::exception &e) {
      throw LLMCError(e.what());
    }
  }
  int32_t threads() const { return model->threads(); }
  void setThreads(int32_t n) {
    try {
      model->setThreads(n);
    } catch (const std::exception &e) {
      throw LLMCError(e.what());
    }
  }
  int64_t microBatch() const { return model->microBatch(); }
  void setMicroBatch(int64_t n) {
    try {
      model->setMicroBatch(n);
    } catch (const std::exception &e) {
      throw LLMCError(e.what());
    }
  }
  int64_t vocab() const { return model->vocabSize(); }

  /// Each kernel's profile since the last reset (an artifact compiled with
  /// profile=True; empty otherwise), as dictionaries.
  py::list profile() const {
    py::list out;
    for (const llmc_kernel_profile &k : model->profile()) {
      py::dict d;
      d["name"] = k.name;
      d["phase"] = k.phase;
      d["calls"] = k.calls;
      d["seconds"] = k.seconds;
      d["flops"] = k.flops;
      d["int_ops"] = k.int_ops;
      d["instructions"] = k.instructions;
      d["bytes"] = k.bytes;
      d["parallel"] = k.parallel;
      d["exact"] = k.exact != 0;
      out.append(d);
    }
    return out;
  }
  void resetProfile() { model->resetProfile(); }

  /// [n, vocab] logits of `ids` processed from position 0 in one call,
  /// returned as a numpy array that owns the buffer the model wrote.
  py::array_t<float> logits(const std::vector<int32_t> &ids) {
    auto *buffer = new std::vector<float>(ids.size() * vocab());
    py::capsule owner(buffer, [](void *p) {
      delete static_cast<std::vector<float> *>(p);
    });
    try {
      model->reset();
      model->forward(ids.data(), static_cast<int64_t>(ids.size()), 0,
                     buffer->data());
    } catch (const std::exception &e) {
      throw LLMCError(e.what());
    }
    return py::array_t<float>({static_cast<py::ssize_t>(ids.size()),
                               static_cast<py::ssize_t>(vocab())},
                              buffer->data(), owner);
  }

  /// Generates up to `maxTokens` tokens after `prompt` (text, encoded with
  /// the artifact's tokenizer, with BOS if it asks for one, or a list of
  /// ids). Returns the
  /// generated ids and, when the artifact has a tokenizer, the text.
  py::dict generate(py::object prompt, int64_t maxTokens, float temperature,
                    int32_t topK, float topP, uint64_t seed) {
    try {
      model->reset();
      std::vector<int32_t> ids;
      std::unique_ptr<llmc::Tokenizer> tok;
      if (model->get() && llmc_model_get_info(model->get())->tokenizer_path)
        tok = std::make_unique<llmc::Tokenizer>(
            llmc::Tokenizer::forModel(*model));
      if (py::isinstance<py::str>(prompt)) {
        if (!tok)
          throw LLMCError(dir + ": the artifact has no tokenizer; pass token "
                                "ids");
        std::string text = prompt.cast<std::string>();
        // BOS as the tokenizer's metadata says, special tokens recognized
        // (as `llmc run --prompt`); an empty prompt starts from BOS.
        ids = tok->tokenize(text, LLMC_TOKENIZE_ADD_SPECIAL |
                                      LLMC_TOKENIZE_PARSE_SPECIAL);
        if (ids.empty()) {
          int32_t bos = llmc_model_get_info(model->get())->bos_id;
          if (bos < 0)
            bos = tok->bosId();
          if (bos < 0)
            throw LLMCError(dir + ": the prompt is empty and the model has no "
                                  "BOS token to start from");
          ids.push_back(bos);
        }
      } else {
        ids = prompt.cast<std::vector<int32_t>>();
      }
      llmc::Sampler sampler({temperature, topK, topP, seed}, vocab());
      std::vector<int32_t> out;
      llmc::GenerateCallbacks cb;
      cb.onToken = [&](int32_t t, const float *) {
        out.push_back(t);
        return false;
      };
      llmc::generate(*model, sampler, ids, maxTokens, cb);
      py::dict result;
      result["ids"] = out;
      if (tok) {
        std::string text;
        int32_t prev = ids.empty() ? -1 : ids.back();
        const llmc_model_info *info = llmc_model_get_info(model->get());
        for (int32_t t : out) {
          bool stop = false;
          for (size_t i = 0; i < info->num_eos_ids; ++i)
            stop |= info->eos_ids[i] == t;
          if (stop)
            break;
          text += std::string(tok->decode(prev, t));
          prev = t;
        }
        result["text"] = text;
      }
      return result;
    } catch (const LLMCError &) {
      throw;
    } catch (const std::exception &e) {
      throw LLMCError(e.what());
    }
  }
};

} // namespace

PYBIND11_MODULE(_llmc, m) {
  m.doc() = "llmc: an MLIR compiler for decoder LLMs (native part)";
  py::register_exception<LLMCError>(m, "Error", PyExc_RuntimeError);

  py::class_<PyModule, std::shared_ptr<PyModule>>(m, "Module")
      .def("__str__", &PyModule::str)
      .def("verify", &PyModule::verify,
           "Raises llmc.Error with the located diagnostics if invalid.")
      .def("clone", [](const PyModule &m) {
        return std::make_shared<PyModule>(m.clone());
      });
  m.def(
      "parse", [](const std::string &t) {
        return std::make_shared<PyModule>(parse(t));
      },
      py::arg("text"), "Parses MLIR text into a Module.");
  m.def(
      "import_model",
      [](const std::string &path, int64_t maxSeqLen) {
        return std::make_shared<PyModule>(importModel(path, maxSeqLen));
      },
      py::arg("path"), py::arg("max_seq_len") = 0,
      "Imports a llama2.c checkpoint or Hugging Face directory as graph IR.");

  py::class_<PyPassManager>(m, "PassManager")
      .def(py::init([](std::string pipeline, bool timing, py::object printAfter,
                       std::string target, std::string actQuant,
                       std::string schedule, std::string kvCache, bool profile,
                       std::string tuning) {
             if (actQuant != "exact" && actQuant != "llama.cpp")
               throw py::value_error(
                   "act_quant: expected 'exact' or 'llama.cpp', got '" +
                   actQuant + "'");
             checkKVCache(kvCache);
             if (schedule != "default" && schedule != "none")
               throw py::value_error(
                   "schedule: expected 'default' or 'none', got '" + schedule +
                   "'");
             auto pm = std::make_unique<PyPassManager>();
             pm->pipeline = std::move(pipeline);
             pm->timing = timing;
             pm->printAfter = printAfter;
             pm->target = std::move(target);
             pm->actQuant = std::move(actQuant);
             pm->kvCache = std::move(kvCache);
             pm->defaultSchedule = schedule == "default";
             pm->profile = profile;
             pm->tuning = std::move(tuning);
             (void)parseTuningOrThrow(pm->tuning);
             return pm;
           }),
           py::arg("pipeline"), py::arg("timing") = false,
           py::arg("print_ir_after") = py::none(), py::arg("target") = "cpu",
           py::arg("act_quant") = "exact", py::arg("schedule") = "default",
           py::arg("kv_cache") = "f32", py::arg("profile") = false,
           py::arg("tuning") = "")
      .def("run", &PyPassManager::run, py::arg("module"))
      .def_readonly("timing_report", &PyPassManager::timingReport);

  py::class_<OpHandle>(m, "OpHandle")
      .def_property_readonly("location", &OpHandle::loc)
      .def("__str__", [](const OpHandle &h) {
        std::string s;
        llvm::raw_string_ostream os(s);
        h.op->print(os);
        return s;
      });

  py::class_<PySchedule>(m, "NativeSchedule")
      .def(py::init(
          [](std::shared_ptr<PyModule> m) { return PySchedule{std::move(m)}; }))
      .def("get_block", &PySchedule::getBlock, py::arg("name"),
           py::arg("func") = "")
      .def("get_loops", &PySchedule::getLoops)
      .def("split", &PySchedule::split)
      .def("split_peel", &PySchedule::splitPeel)
      .def("rfactor", &PySchedule::rfactor, py::arg("block"), py::arg("lanes"),
           py::arg("root") = py::none())
      .def("tree_reduce", &PySchedule::treeReduce, py::arg("block"),
           py::arg("segment") = 0)
      .def("contract", &PySchedule::contract)
      .def("reverse", &PySchedule::reverse)
      .def("reorder", &PySchedule::reorder)
      .def("fuse", &PySchedule::fuse)
      .def("fuse_siblings", &PySchedule::fuseSiblings)
      .def("fuse_launches", &PySchedule::fuseLaunches)
      .def("decompose_reduction", &PySchedule::decomposeReduction)
      .def("compute_at", &PySchedule::computeAt)
      .def("reverse_compute_inline", &PySchedule::reverseComputeInline,
           py::arg("block"), py::arg("into_reduction") = false)
      .def("compute_inline", &PySchedule::computeInline)
      .def("distribute", &PySchedule::distribute)
      .def("expand", &PySchedule::expand)
      .def("hoist", &PySchedule::hoist)
      .def("cache_read",
           [](PySchedule &s, const OpHandle &b, unsigned i) {
             return s.cache(b, i, "cache_read", llmc::tl::cacheRead);
           })
      .def("cache_write",
           [](PySchedule &s, const OpHandle &b, unsigned i) {
             return s.cache(b, i, "cache_write", llmc::tl::cacheWrite);
           })
      .def("split_halves",
           [](PySchedule &s, const OpHandle &b, unsigned i) {
             return s.cache(
                 b, i, "split_halves",
                 [](RewriterBase &rw, llmc::tl::BlockOp block, unsigned read) {
                   return llmc::tl::splitHalves(rw, block, read);
                 });
           })
      .def("dequant_halves",
           [](PySchedule &s, const OpHandle &b) {
             return s.cache(
                 b, 0, "dequant_halves",
                 [](RewriterBase &rw, llmc::tl::BlockOp block, unsigned) {
                   return llmc::tl::dequantHalves(rw, block);
                 });
           })
      .def("mma", [](PySchedule &s,
                     const OpHandle &h) { s.mark(h, "mma", llmc::tl::mma); })
      .def("library",
           [](PySchedule &s, const OpHandle &h) {
             s.mark(h, "library", llmc::tl::library);
           })
      .def("parallel",
           [](PySchedule &s, const OpHandle &h) {
             s.mark(h, "parallel", llmc::tl::parallel);
           })
      .def("vectorize",
           [](PySchedule &s, const OpHandle &h) {
             s.mark(h, "vectorize", llmc::tl::vectorize);
           })
      .def("unroll",
           [](PySchedule &s, const OpHandle &h) {
             s.mark(h, "unroll", llmc::tl::unroll);
           })
      .def("bind", [](PySchedule &s, const OpHandle &h,
                      const std::string &thread) {
        s.mark(h, "bind",
               [&](llmc::tl::ForOp l) { return llmc::tl::bind(l, thread); });
      });

  m.def(
      "compile",
      [](std::shared_ptr<PyModule> module, const std::string &output,
         const std::string &target, const std::string &tokenizer,
         py::object schedule, const std::string &actQuant,
         const std::string &kvCache, bool profile, const std::string &tuning,
         const std::string &mesh, const std::vector<std::string> &roles,
         int64_t microBatch) {
        if (actQuant != "exact" && actQuant != "llama.cpp")
          throw py::value_error("act_quant: expected 'exact' or 'llama.cpp', got '" +
                                actQuant + "'");
        checkKVCache(kvCache);
        DiagnosticCollector diags(module->ctx.get());
        llmc::ArtifactOptions options;
        options.outDir = output;
        options.pipeline.target = resolveTargetOrThrow(target);
        options.tokenizer = tokenizer;
        options.pipeline.actQuant = actQuant;
        options.pipeline.kvCache = kvCache;
        options.pipeline.profile = profile;
        options.pipeline.tuning = parseTuningOrThrow(tuning);
        // Sharded over a mesh: the cost model's plan, or the given roles
        // (`llmc compile --mesh` / `--shard-plan`).
        if (!mesh.empty()) {
          options.pipeline.distribute.emplace();
          options.pipeline.distribute->mesh = mesh;
          options.pipeline.distribute->roles.assign(roles.begin(), roles.end());
          if (microBatch < -1)
            throw py::value_error("micro_batch: expected tokens >= 0, got " +
                                  std::to_string(microBatch));
          options.pipeline.distribute->microBatch = microBatch;
        } else if (!roles.empty() || microBatch >= 0) {
          throw py::value_error(
              std::string(roles.empty() ? "micro_batch" : "roles") +
              ": given without a mesh");
        }
        // Compilation lowers in place: work on a copy.
        auto copy = std::make_shared<PyModule>(module->clone());
        // A Python exception from the schedule is kept and re-raised after
        // the (C++) compilation has unwound cleanly.
        std::optional<py::error_already_set> pyError;
        if (!schedule.is_none())
          options.pipeline.schedule = [&](ModuleOp) -> LogicalResult {
            try {
              schedule(copy);
              return success();
            } catch (py::error_already_set &e) {
              pyError = std::move(e);
              return failure();
            }
          };
        llvm::Error error = llmc::compileArtifact(*copy->module, options);
        if (pyError) {
          llvm::consumeError(std::move(error));
          throw *pyError;
        }
        if (error) {
          std::string msg = llvm::toString(std::move(error));
          diags.raise(msg);
        }
        return output;
      },
      py::arg("module"), py::arg("output"), py::arg("target") = "cpu",
      py::arg("tokenizer") = "", py::arg("schedule") = py::none(),
      py::arg("act_quant") = "exact", py::arg("kv_cache") = "f32",
      py::arg("profile") = false, py::arg("tuning") = "", py::arg("mesh") = "",
      py::arg("roles") = std::vector<std::string>(),
      py::arg("micro_batch") = -1,
      "Compiles a graph module into an artifact directory; returns its path.");

  py::class_<PyRuntime>(m, "Runtime")
      .def(py::init<const std::string &, int32_t>(), py::arg("artifact"),
           py::arg("threads") = 0,
           "Loads an artifact; `threads` (default: LLMC_THREADS, else every "
           "core) is how many threads its forward calls use.")
      .def_property("threads", &PyRuntime::threads, &PyRuntime::setThreads)
      .def_property("micro_batch", &PyRuntime::microBatch,
                    &PyRuntime::setMicroBatch,
                    "The most tokens one call of the compiled code runs (0: "
                    "whole calls; a pipeline's default: its plan's). Every "
                    "rank of a sharded model must set the same.")
      .def_property_readonly("vocab_size", &PyRuntime::vocab)
      .def_property_readonly(
          "rank", [](const PyRuntime &r) { return r.model->rank(); },
          "A sharded model's rank in its job (`mpirun -np N python3 ...`; "
          "every rank makes the same calls), 0 otherwise")
      .def("logits", &PyRuntime::logits, py::arg("token_ids"))
      .def("profile", &PyRuntime::profile,
           "Each kernel's calls, seconds and the cost model's work "
           "(flops, int_ops, instructions, bytes, parallel) since the last "
           "reset_profile(); empty unless compiled with profile=True.")
      .def("reset_profile", &PyRuntime::resetProfile)
      .def("generate", &PyRuntime::generate, py::arg("prompt"),
           py::arg("max_tokens") = 64, py::arg("temperature") = 0.0f,
           py::arg("top_k") = 0, py::arg("top_p") = 1.0f, py::arg("seed") = 42);
}
