//===- Metadata.cpp - Reading and validating metadata.json ------*- C++ -*-===//
//
// Field access goes through small helpers that know the dotted path of the
// field ("model.vocab_size") so that every message can name it exactly.
//
//===----------------------------------------------------------------------===//

#include "Metadata.h"

#include "llmc/runtime.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace llmc::rt {

std::string readFile(const std::string &path) {
  std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path.c_str(), "rb"),
                                           &std::fclose);
  if (!f)
    throw Error(path + ": cannot open: " + errnoMessage(errno));
  std::string data;
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f.get())) > 0)
    data.append(buffer, n);
  if (std::ferror(f.get()))
    throw Error(path + ": read error: " + errnoMessage(errno));
  return data;
}

std::string joinPath(const std::string &dir, const std::string &file) {
  if (dir.empty() || dir.back() == '/')
    return dir + file;
  return dir + "/" + file;
}

std::string ArtifactMetadata::weightsPathOfRank(int64_t rank) const {
  std::string path = weightsPath;
  size_t at = path.find("{rank}");
  if (at != std::string::npos)
    path.replace(at, 6, std::to_string(rank));
  return path;
}

namespace {

/// Checks fields of one metadata document, naming `path` in every error.
class FieldChecker {
public:
  explicit FieldChecker(const std::string &path) : path(path) {}

  [[noreturn]] void fail(const std::string &field,
                         const std::string &message) const {
    throw Error(path + ": field '" + field + "' " + message);
  }

  /// Returns member `name` of `object` (whose own path is `parent`).
  const JsonValue &get(const JsonValue &object, const std::string &parent,
                       const char *name) const {
    const JsonValue *v = object.find(name);
    if (!v)
      fail(child(parent, name), "is missing");
    return *v;
  }

  const JsonValue &getObject(const JsonValue &object, const std::string &parent,
                             const char *name) const {
    const JsonValue &v = get(object, parent, name);
    expect(v, JsonValue::Kind::Object, child(parent, name));
    return v;
  }

  std::string getString(const JsonValue &object, const std::string &parent,
                        const char *name) const {
    const JsonValue &v = get(object, parent, name);
    expect(v, JsonValue::Kind::String, child(parent, name));
    return v.asString();
  }

  /// A relative file name inside the artifact directory.
  std::string getFileName(const JsonValue &object, const std::string &parent,
                          const char *name) const {
    std::string file = getString(object, parent, name);
    if (file.empty())
      fail(child(parent, name), "must not be empty");
    if (file.front() == '/')
      fail(child(parent, name),
           "must be a path relative to the artifact directory, got \"" + file +
               "\"");
    return file;
  }

  int64_t getInteger(const JsonValue &object, const std::string &parent,
                     const char *name, int64_t min, int64_t max) const {
    return checkInteger(get(object, parent, name), child(parent, name), min,
                        max);
  }

  int64_t checkInteger(const JsonValue &v, const std::string &field,
                       int64_t min, int64_t max) const {
    if (!v.isInteger())
      fail(field, "must be an integer, got " + describe(v));
    int64_t i = v.asInteger();
    if (i < min || i > max)
      fail(field, "is " + std::to_string(i) + ", expected a value in [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
    return i;
  }

  static std::string child(const std::string &parent, const std::string &name) {
    return parent.empty() ? name : parent + "." + name;
  }

private:
  const std::string &path;

  void expect(const JsonValue &v, JsonValue::Kind kind,
              const std::string &field) const {
    if (v.kind() != kind)
      fail(field, std::string("must be ") + JsonValue::kindName(kind) +
                      ", got " + describe(v));
  }

  static std::string describe(const JsonValue &v) {
    if (v.isNumber() && !v.isInteger())
      return "a non-integer number";
    return JsonValue::kindName(v.kind());
  }
};

/// The indices into LLMC_ARENA_SIZE_NAMES of the names in `of`, an array
/// of at most `most` of them; with `divisors`, a name may be a size's floor
/// over a positive integer ("tokens/4"), whose divisor goes there (1 for a
/// plain size).
std::vector<int> sizeIndices(const FieldChecker &c, const JsonValue &of,
                             const std::string &field, size_t most,
                             std::vector<int64_t> *divisors = nullptr) {
  static const char *const sizeNames[] = {LLMC_ARENA_SIZE_NAMES};
  if (!of.isArray() || of.asArray().size() > most)
    c.fail(field, "must be an array of at most " + std::to_string(most) +
                      " size names (tokens, pos0, n_out)");
  std::vector<int> sizes;
  for (const JsonValue &name : of.asArray()) {
    std::string size = name.isString() ? name.asString() : "";
    int64_t divisor = 1;
    if (size_t slash = size.find('/'); divisors && slash != std::string::npos) {
      std::string digits = size.substr(slash + 1);
      bool allDigits = !digits.empty() && digits.size() <= 18 &&
                       std::all_of(digits.begin(), digits.end(), [](char ch) {
                         return ch >= '0' && ch <= '9';
                       });
      divisor = allDigits ? std::strtoll(digits.c_str(), nullptr, 10) : 0;
      if (!allDigits || divisor < 1)
        c.fail(field, "has a size over \"" + digits +
                          "\", expected a positive integer");
      size.resize(slash);
    }
    auto *found = std::find(std::begin(sizeNames), std::end(sizeNames), size);
    if (found == std::end(sizeNames))
      c.fail(field, "names an unknown size (expected tokens, pos0 or n_out)");
    sizes.push_back(static_cast<int>(found - std::begin(sizeNames)));
    if (divisors)
      divisors->push_back(divisor);
  }
  return sizes;
}

/// An expression of the dispatch program (ArtifactMetadata::Expr).
ArtifactMetadata::Expr readExpr(const FieldChecker &c, const JsonValue &v,
                                const std::string &field) {
  using Expr = ArtifactMetadata::Expr;
  Expr e;
  if (v.isInteger()) {
    e.value = v.asInteger();
    return e;
  }
  if (v.isString()) {
    const auto &names = Expr::sizeNames();
    auto it = std::find(names.begin(), names.end(), v.asString());
    if (it == names.end())
      c.fail(field, "names no size of a call: \"" + v.asString() + "\"");
    e.kind = Expr::Kind::Size;
    e.value = it - names.begin();
    return e;
  }
  if (!v.isArray() || v.asArray().empty() || !v.asArray()[0].isString())
    c.fail(field, "must be an integer, a size name or [op, ...]");
  const auto &a = v.asArray();
  const std::string &op = a[0].asString();
  if (op == "token") {
    if (a.size() != 2)
      c.fail(field, "[\"token\", i] takes one operand");
    e.kind = Expr::Kind::Token;
    e.operands.push_back(readExpr(c, a[1], field + "[1]"));
    return e;
  }
  static const char *ops[] = {"+",       "-",   "*",   "floordiv",
                              "ceildiv", "mod", "min", "max"};
  if (std::find(std::begin(ops), std::end(ops), op) == std::end(ops) ||
      a.size() != 3)
    c.fail(field, "has an unknown operation \"" + op +
                      "\" (or not two "
                      "operands)");
  e.kind = Expr::Kind::Op;
  e.op = op;
  for (size_t i = 1; i < 3; ++i)
    e.operands.push_back(
        readExpr(c, a[i], field + "[" + std::to_string(i) + "]"));
  return e;
}

/// A binding's buffer: one of the entry's (llmc/abi.h).
std::string readBufferName(const FieldChecker &c, const JsonValue &a,
                           const std::string &field) {
  std::string name = c.getString(a, field, "buffer");
  if (name != "tokens" && name != "weights" && name != "kv" &&
      name != "logits" && name != "arena")
    c.fail(field + ".buffer", "is \"" + name +
                                  "\", expected tokens, weights, kv, "
                                  "logits or arena");
  return name;
}

/// `device`: the kernels and each phase's launches.
void readDevice(const FieldChecker &c, const JsonValue &device,
                ArtifactMetadata &md) {
  if (!device.isObject())
    c.fail("device", "must be an object");
  const JsonValue &kernels = c.get(device, "device", "kernels");
  if (!kernels.isArray())
    c.fail("device.kernels", "must be an array");
  for (size_t i = 0; i < kernels.asArray().size(); ++i) {
    const JsonValue &k = kernels.asArray()[i];
    std::string field = "device.kernels[" + std::to_string(i) + "]";
    if (!k.isObject())
      c.fail(field, "must be an object");
    ArtifactMetadata::DeviceKernel kernel;
    kernel.name = c.getString(k, field, "name");
    const JsonValue &wg = c.get(k, field, "workgroup");
    if (!wg.isArray() || wg.asArray().size() != 3)
      c.fail(field + ".workgroup", "must be three integers");
    for (int d = 0; d < 3; ++d)
      kernel.workgroup[d] =
          c.checkInteger(wg.asArray()[d], field + ".workgroup", 1, 1024);
    if (const JsonValue *sg = k.find("subgroup"))
      kernel.subgroup = c.checkInteger(*sg, field + ".subgroup", 1, 1024);
    md.deviceKernels.push_back(std::move(kernel));
  }
  if (const JsonValue *features = device.find("features")) {
    if (!features->isArray())
      c.fail("device.features", "must be an array of strings");
    for (const JsonValue &f : features->asArray()) {
      if (!f.isString())
        c.fail("device.features", "must be an array of strings");
      md.deviceFeatures.push_back(f.asString());
    }
  }
  // A CUDA artifact's SM and PTX (docs/artifact.md).
  if (md.target == "cuda") {
    md.cudaArch = c.getString(device, "device", "arch");
    if (md.cudaArch.rfind("sm_", 0) != 0 || md.cudaArch.size() < 5 ||
        md.cudaArch.find_first_not_of("0123456789", 3) != std::string::npos)
      c.fail("device.arch",
             "is \"" + md.cudaArch + "\", expected sm_NN (e.g. sm_90)");
    md.ptxPath = joinPath(md.dir, c.getFileName(device, "device", "ptx"));
    // (Absent: the kernels do not wait for the one before.)
    if (const JsonValue *pdl = device.find("pdl")) {
      if (!pdl->isBool())
        c.fail("device.pdl", "must be true or false");
      md.cudaDependentLaunch = pdl->asBool();
    }
  }
  const JsonValue &phases = c.getObject(device, "device", "phases");
  for (const char *name : {"prefill", "decode"}) {
    std::string field = std::string("device.phases.") + name;
    const JsonValue &list = c.get(phases, "device.phases", name);
    if (!list.isArray())
      c.fail(field, "must be an array");
    auto &out = std::string(name) == "prefill" ? md.prefill : md.decode;
    for (size_t i = 0; i < list.asArray().size(); ++i) {
      const JsonValue &l = list.asArray()[i];
      std::string lf = field + "[" + std::to_string(i) + "]";
      if (!l.isObject())
        c.fail(lf, "must be an object");
      ArtifactMetadata::Launch launch;
      if (const JsonValue *copy = l.find("copy")) {
        std::string cf = lf + ".copy";
        if (!copy->isObject())
          c.fail(cf, "must be an object");
        launch.copy = true;
        for (auto [which, arg] :
             {std::pair{"src", &launch.src}, std::pair{"dst", &launch.dst}}) {
          std::string wf = cf + "." + which;
          const JsonValue &b = c.getObject(*copy, cf, which);
          arg->buffer = readBufferName(c, b, wf);
          arg->offset = readExpr(c, c.get(b, wf, "offset"), wf + ".offset");
        }
        launch.bytes = readExpr(c, c.get(*copy, cf, "bytes"), cf + ".bytes");
        out.push_back(std::move(launch));
        continue;
      }
      if (const JsonValue *gemm = l.find("gemm")) {
        std::string gf = lf + ".gemm";
        if (!gemm->isObject())
          c.fail(gf, "must be an object");
        if (md.target != "cuda")
          c.fail(gf, "is a product of cuBLAS, which a " + md.target +
                         " artifact cannot call (target cuda only)");
        launch.gemm = true;
        ArtifactMetadata::Gemm &g = launch.product;
        for (auto [which, arg] : {std::pair{"a", &g.a}, std::pair{"b", &g.b},
                                  std::pair{"out", &g.out}}) {
          std::string wf = gf + "." + which;
          const JsonValue &b = c.getObject(*gemm, gf, which);
          arg->buffer = readBufferName(c, b, wf);
          arg->offset = readExpr(c, c.get(b, wf, "offset"), wf + ".offset");
          arg->bytes = readExpr(c, c.get(b, wf, "bytes"), wf + ".bytes");
        }
        for (auto [which, e] :
             {std::pair{"m", &g.m}, std::pair{"n", &g.n}, std::pair{"k", &g.k},
              std::pair{"lda", &g.lda}, std::pair{"ldb", &g.ldb},
              std::pair{"ldc", &g.ldc}})
          *e = readExpr(c, c.get(*gemm, gf, which), gf + "." + which);
        for (auto [which, v] :
             {std::pair{"alpha", &g.alpha}, std::pair{"beta", &g.beta}}) {
          const JsonValue &x = c.get(*gemm, gf, which);
          if (!x.isNumber())
            c.fail(gf + "." + which, "must be a number");
          *v = x.asDouble();
        }
        if (g.beta != 0 && g.beta != 1)
          c.fail(gf + ".beta", "must be 0 or 1");
        if (c.getString(*gemm, gf, "type") != "f16")
          c.fail(gf + ".type", "is \"" + c.getString(*gemm, gf, "type") +
                                   "\", expected f16 (a and b f16, out f32)");
        out.push_back(std::move(launch));
        continue;
      }
      launch.kernel = c.getInteger(l, lf, "kernel", 0,
                                   int64_t(md.deviceKernels.size()) - 1);
      const JsonValue &grid = c.get(l, lf, "grid");
      if (!grid.isArray() || grid.asArray().size() != 3)
        c.fail(lf + ".grid", "must be three expressions");
      for (int d = 0; d < 3; ++d)
        launch.grid[d] = readExpr(c, grid.asArray()[d],
                                  lf + ".grid[" + std::to_string(d) + "]");
      const JsonValue &args = c.get(l, lf, "args");
      if (!args.isArray())
        c.fail(lf + ".args", "must be an array");
      for (size_t j = 0; j < args.asArray().size(); ++j) {
        const JsonValue &a = args.asArray()[j];
        std::string af = lf + ".args[" + std::to_string(j) + "]";
        if (!a.isObject())
          c.fail(af, "must be an object");
        ArtifactMetadata::DeviceArg arg;
        if (const JsonValue *v = a.find("scalar")) {
          arg.scalar = true;
          arg.value = readExpr(c, *v, af + ".scalar");
        } else {
          arg.buffer = readBufferName(c, a, af);
          arg.offset = readExpr(c, c.get(a, af, "offset"), af + ".offset");
          arg.bytes = readExpr(c, c.get(a, af, "bytes"), af + ".bytes");
          // (Absent: the kernel may write it.)
          if (const JsonValue *w = a.find("writes")) {
            if (!w->isBool())
              c.fail(af + ".writes", "must be true or false");
            arg.writes = w->asBool();
          }
        }
        launch.args.push_back(std::move(arg));
      }
      out.push_back(std::move(launch));
    }
  }
}

} // namespace

const std::vector<std::string> &ArtifactMetadata::Expr::sizeNames() {
  static const std::vector<std::string> names = {
      "tokens", "pos0", "n_out", "weights_bytes", "arena_bytes"};
  return names;
}

int64_t ArtifactMetadata::evaluate(const Expr &e, const CallSizes &s) {
  switch (e.kind) {
  case Expr::Kind::Const:
    return e.value;
  case Expr::Kind::Size: {
    const int64_t values[] = {s.tokens, s.pos0, s.nOut, s.weightsBytes,
                              s.arenaBytes};
    return values[e.value];
  }
  case Expr::Kind::Token: {
    int64_t i = evaluate(e.operands[0], s);
    if (!s.tokenIds || i < 0 || i >= s.tokens)
      throw Error("dispatch program: token " + std::to_string(i) +
                  " of a call of " + std::to_string(s.tokens) + " tokens");
    return s.tokenIds[i];
  }
  case Expr::Kind::Op:
    break;
  }
  int64_t a = evaluate(e.operands[0], s), b = evaluate(e.operands[1], s);
  const std::string &op = e.op;
  if ((op == "floordiv" || op == "ceildiv" || op == "mod") && b == 0)
    throw Error("dispatch program: division by zero");
  if (op == "+")
    return a + b;
  if (op == "-")
    return a - b;
  if (op == "*")
    return a * b;
  if (op == "floordiv")
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
  if (op == "ceildiv")
    return -((-a) / b - (((-a) % b != 0) && (((-a) < 0) != (b < 0))));
  if (op == "mod")
    return ((a % b) + b) % b;
  if (op == "min")
    return std::min(a, b);
  return std::max(a, b);
}

double ArtifactMetadata::evaluate(const Work &work, int64_t n, int64_t pos0,
                                  int64_t nOut) {
  const int64_t sizes[] = {n, pos0, nOut};
  double total = 0;
  for (const WorkTerm &term : work) {
    double v = term.c;
    for (size_t i = 0; i < term.sizes.size(); ++i)
      v *= static_cast<double>(sizes[term.sizes[i]] / term.divisors[i]);
    total += v;
  }
  return total;
}

ArtifactMetadata validateMetadata(const JsonValue &root, const std::string &dir,
                                  const std::string &metadataPath) {
  FieldChecker c(metadataPath);
  ArtifactMetadata md;
  md.dir = dir;
  md.metadataPath = metadataPath;
  if (!root.isObject())
    throw Error(metadataPath + ": expected a JSON object at the top level");

  // Identify the file before reading anything else, so that a file from
  // another tool or a future format gets this message rather than a
  // confusing one about some field.
  std::string format = c.getString(root, "", "format");
  if (format != LLMC_ARTIFACT_FORMAT)
    throw Error(metadataPath + ": unknown format \"" + format +
                "\" (expected \"" LLMC_ARTIFACT_FORMAT "\")");
  const JsonValue &version = c.get(root, "", "version");
  if (!version.isInteger())
    c.fail("version", "must be an integer");
  md.version = version.asInteger();
  if (md.version != LLMC_ARTIFACT_VERSION)
    throw Error(metadataPath + ": unsupported version " +
                std::to_string(md.version) + " (this runtime supports " +
                std::to_string(LLMC_ARTIFACT_VERSION) +
                "; compile the model again with this llmc)");

  md.target = c.getString(root, "", "target");
  if (const JsonValue *desc = root.find("target_description");
      desc && desc->isString())
    md.targetDescription = desc->asString();
  md.libraryPath = joinPath(dir, c.getFileName(root, "", "library"));

  const JsonValue &weights = c.getObject(root, "", "weights");
  md.weightsPath = joinPath(dir, c.getFileName(weights, "weights", "file"));
  md.weightsBytes = c.getInteger(weights, "weights", "bytes", 0, INT64_MAX);
  if (weights.find("decode_read_bytes"))
    md.decodeReadBytes = c.getInteger(weights, "weights", "decode_read_bytes",
                                      0, md.weightsBytes);

  if (root.find("dist")) {
    const JsonValue &dist = c.getObject(root, "", "dist");
    ArtifactMetadata::Dist d;
    d.ranks = c.getInteger(dist, "dist", "ranks", 1, 1 << 20);
    const JsonValue &shape = c.get(dist, "dist", "shape");
    const JsonValue &axes = c.get(dist, "dist", "axes");
    if (!shape.isArray() || shape.asArray().empty() || !axes.isArray() ||
        axes.asArray().size() != shape.asArray().size())
      c.fail("dist.shape", "and dist.axes must be lists of one size per axis");
    int64_t product = 1;
    for (const JsonValue &n : shape.asArray()) {
      d.shape.push_back(c.checkInteger(n, "dist.shape", 1, 1 << 20));
      product *= d.shape.back();
    }
    if (product != d.ranks)
      c.fail("dist.ranks", "is " + std::to_string(d.ranks) +
                               " but the mesh's shape holds " +
                               std::to_string(product));
    for (const JsonValue &a : axes.asArray()) {
      if (!a.isString() || a.asString().empty())
        c.fail("dist.axes", "must be names");
      d.axes.push_back(a.asString());
    }
    auto axisIndex = [&](const JsonValue &a, const char *field) {
      auto it = a.isString()
                    ? std::find(d.axes.begin(), d.axes.end(), a.asString())
                    : d.axes.end();
      if (it == d.axes.end())
        c.fail(field, "names an axis that dist.axes does not have");
      return static_cast<int>(it - d.axes.begin());
    };
    const JsonValue &groups = c.get(dist, "dist", "groups");
    if (!groups.isArray())
      c.fail("dist.groups", "must be a list of lists of axis names");
    for (const JsonValue &g : groups.asArray()) {
      if (!g.isArray() || g.asArray().empty())
        c.fail("dist.groups", "must be a list of lists of axis names");
      std::vector<int> group;
      for (const JsonValue &a : g.asArray())
        group.push_back(axisIndex(a, "dist.groups"));
      d.groups.push_back(std::move(group));
    }
    if (const JsonValue *pp = dist.find("pp")) {
      if (!pp->isArray() || pp->asArray().empty())
        c.fail("dist.pp", "must be a list of axis names");
      for (const JsonValue &a : pp->asArray())
        d.ppAxes.push_back(axisIndex(a, "dist.pp"));
      int64_t stages = 1;
      for (int a : d.ppAxes)
        stages *= d.shape[a];
      d.stage = dist.find("stage")
                    ? c.getInteger(dist, "dist", "stage", 0, stages - 1)
                    : 0;
      if (const JsonValue *dirs = dist.find("stage_dirs")) {
        if (!dirs->isArray() ||
            static_cast<int64_t>(dirs->asArray().size()) != stages)
          c.fail("dist.stage_dirs", "must list a directory for each of the " +
                                        std::to_string(stages) + " stages");
        for (const JsonValue &dir : dirs->asArray()) {
          if (!dir.isString() || dir.asString().empty() ||
              dir.asString().front() == '/' ||
              dir.asString().find("..") != std::string::npos)
            c.fail("dist.stage_dirs",
                   "must be directories inside the artifact");
          d.stageDirs.push_back(dir.asString());
        }
      }
    }
    if (dist.find("micro_batch"))
      d.microBatch = c.getInteger(dist, "dist", "micro_batch", 0, INT64_MAX);
    if (const JsonValue *t = dist.find("predicted_seconds_per_token");
        t && t->isNumber())
      d.predictedSecondsPerToken = t->asDouble();
    if (md.weightsPath.find("{rank}") == std::string::npos)
      c.fail("weights.file", "must name each rank's blob with {rank} in a "
                             "sharded artifact");
    md.dist = std::move(d);
  } else if (md.weightsPath.find("{rank}") != std::string::npos) {
    c.fail("weights.file", "names {rank} but the artifact has no dist");
  }

  if (root.find("compute")) {
    const JsonValue &compute = c.getObject(root, "", "compute");
    md.tokenFlops = c.getInteger(compute, "compute", "token_flops", 0, INT64_MAX);
    md.rowFlops = c.getInteger(compute, "compute", "row_flops", 0, INT64_MAX);
    md.pairFlops = c.getInteger(compute, "compute", "pair_flops", 0, INT64_MAX);
  }

  const JsonValue &model = c.getObject(root, "", "model");
  if (const JsonValue *arch = model.find("arch"); arch && arch->isString())
    md.arch = arch->asString();
  md.vocabSize = c.getInteger(model, "model", "vocab_size", 1, INT32_MAX);
  md.maxSeqLen = c.getInteger(model, "model", "max_seq_len", 1, INT32_MAX);
  md.bosId = static_cast<int32_t>(
      c.getInteger(model, "model", "bos_id", -1, md.vocabSize - 1));
  const JsonValue &eos = c.get(model, "model", "eos_ids");
  if (!eos.isArray())
    c.fail("model.eos_ids", "must be an array of integers");
  for (size_t i = 0; i < eos.asArray().size(); ++i)
    md.eosIds.push_back(static_cast<int32_t>(c.checkInteger(
        eos.asArray()[i], "model.eos_ids[" + std::to_string(i) + "]", 0,
        md.vocabSize - 1)));

  const JsonValue &kv = c.getObject(root, "", "kv_cache");
  std::string dtype = c.getString(kv, "kv_cache", "dtype");
  if (dtype != "f32" && dtype != "f16")
    c.fail("kv_cache.dtype",
           "is \"" + dtype + "\", expected \"f32\" or \"f16\"");
  md.kvCacheElementBytes = dtype == "f16" ? 2 : 4;
  // The keys' and values' layout concerns only the compiled code; it must be
  // one of llmc/abi.h's.
  std::string layout = c.getString(kv, "kv_cache", "layout");
  if (layout != LLMC_KV_CACHE_LAYOUT &&
      layout != LLMC_KV_CACHE_LAYOUT_BY_POSITION &&
      layout != LLMC_KV_CACHE_LAYOUT_FLASH &&
      layout != LLMC_KV_CACHE_LAYOUT_BLOCKED)
    c.fail("kv_cache.layout", "is \"" + layout + "\", expected \"" +
                                  LLMC_KV_CACHE_LAYOUT + "\", \"" +
                                  LLMC_KV_CACHE_LAYOUT_BY_POSITION + "\", \"" +
                                  LLMC_KV_CACHE_LAYOUT_FLASH + "\" or \"" +
                                  LLMC_KV_CACHE_LAYOUT_BLOCKED + "\"");
  const JsonValue &shape = c.get(kv, "kv_cache", "shape");
  if (!shape.isArray() || shape.asArray().size() != LLMC_KV_CACHE_RANK)
    c.fail("kv_cache.shape", "must be an array of " +
                                 std::to_string(LLMC_KV_CACHE_RANK) +
                                 " integers");
  // Checked against INT32_MAX each so that the product cannot overflow
  // before the size check below.
  for (size_t i = 0; i < LLMC_KV_CACHE_RANK; ++i)
    md.kvCacheShape.push_back(c.checkInteger(
        shape.asArray()[i], "kv_cache.shape[" + std::to_string(i) + "]", 1,
        INT32_MAX));
  // The layout is llmc/abi.h's: the last axis holds max_seq_len positions
  // of every element of a head.
  if (md.kvCacheShape[1] != 2)
    c.fail("kv_cache.shape[1]", "is " + std::to_string(md.kvCacheShape[1]) +
                                    ", expected 2 (k and v)");
  if (md.kvCacheShape[3] % md.maxSeqLen != 0)
    c.fail("kv_cache.shape[3]", "is " + std::to_string(md.kvCacheShape[3]) +
                                    ", expected a multiple of "
                                    "model.max_seq_len = " +
                                    std::to_string(md.maxSeqLen));
  // 2^46 floats (256 TiB) is beyond any machine; the bound keeps the byte
  // count computed by the loader far from overflow.
  const uint64_t maxElements = uint64_t(1) << 46;
  uint64_t elements = 1;
  for (int64_t e : md.kvCacheShape) {
    if (elements > maxElements / static_cast<uint64_t>(e))
      c.fail("kv_cache.shape", "describes an impossibly large cache");
    elements *= static_cast<uint64_t>(e);
  }

  const JsonValue &entry = c.getObject(root, "", "entry");
  md.forwardSymbol = c.getString(entry, "entry", "forward");
  if (md.forwardSymbol.empty())
    c.fail("entry.forward", "must not be empty");

  const JsonValue &arena = c.getObject(root, "", "arena");
  md.arenaAlignment =
      c.getInteger(arena, "arena", "alignment", LLMC_ARENA_ALIGNMENT, 4096);
  if (md.arenaAlignment & (md.arenaAlignment - 1))
    c.fail("arena.alignment", "is " + std::to_string(md.arenaAlignment) +
                                  ", expected a power of two");
  const JsonValue &plans = c.get(arena, "arena", "plans");
  if (!plans.isArray())
    c.fail("arena.plans", "must be an array of plans");
  for (size_t p = 0; p < plans.asArray().size(); ++p) {
    std::string planField = "arena.plans[" + std::to_string(p) + "]";
    const JsonValue &plan = plans.asArray()[p];
    if (!plan.isArray())
      c.fail(planField, "must be an array of terms");
    std::vector<ArtifactMetadata::ArenaTerm> terms;
    for (size_t t = 0; t < plan.asArray().size(); ++t) {
      std::string field = planField + "[" + std::to_string(t) + "]";
      const JsonValue &term = plan.asArray()[t];
      if (!term.isObject())
        c.fail(field, "must be an object {bytes, of}");
      ArtifactMetadata::ArenaTerm parsed;
      // 2^40 bytes per unit; with at most two sizes below 2^31 each, a
      // term's value fits in 128 bits.
      parsed.bytes = c.getInteger(term, field, "bytes", 0, int64_t(1) << 40);
      parsed.sizes = sizeIndices(c, c.get(term, field, "of"), field + ".of", 2);
      terms.push_back(std::move(parsed));
    }
    md.arenaPlans.push_back(std::move(terms));
  }

  if (const JsonValue *profiled = root.find("profiled")) {
    if (!profiled->isBool())
      c.fail("profiled", "must be true or false");
    md.profiled = profiled->asBool();
  }
  if (const JsonValue *kernels = root.find("kernels")) {
    if (!kernels->isArray())
      c.fail("kernels", "must be an array of kernels");
    for (size_t k = 0; k < kernels->asArray().size(); ++k) {
      std::string field = "kernels[" + std::to_string(k) + "]";
      const JsonValue &kernel = kernels->asArray()[k];
      if (!kernel.isObject())
        c.fail(field, "must be an object");
      ArtifactMetadata::Kernel parsed;
      parsed.name = c.getString(kernel, field, "name");
      parsed.phase = c.getString(kernel, field, "phase");
      parsed.calls = c.getInteger(kernel, field, "calls", 0, INT32_MAX);
      const JsonValue *exact = kernel.find("exact");
      if (!exact || !exact->isBool())
        c.fail(field + ".exact", "must be true or false");
      parsed.exact = exact->asBool();
      auto work = [&](const char *name, ArtifactMetadata::Work &out) {
        std::string workField = field + "." + name;
        const JsonValue &terms = c.get(kernel, field, name);
        if (!terms.isArray())
          c.fail(workField, "must be an array of terms {c, of}");
        for (size_t t = 0; t < terms.asArray().size(); ++t) {
          std::string termField = workField + "[" + std::to_string(t) + "]";
          const JsonValue &term = terms.asArray()[t];
          const JsonValue *coefficient = term.find("c");
          if (!coefficient || !coefficient->isNumber())
            c.fail(termField, "must be an object {c: number, of: sizes}");
          ArtifactMetadata::WorkTerm w;
          w.c = coefficient->asDouble();
          w.sizes = sizeIndices(c, c.get(term, termField, "of"),
                                termField + ".of", 4, &w.divisors);
          out.push_back(std::move(w));
        }
      };
      work("flops", parsed.flops);
      work("int_ops", parsed.intOps);
      work("instructions", parsed.instructions);
      work("bytes", parsed.bytes);
      work("parallel", parsed.parallel);
      work("trips", parsed.trips);
      md.kernels.push_back(std::move(parsed));
    }
  }

  if (const JsonValue *device = root.find("device")) {
    md.hasDevice = true;
    readDevice(c, *device, md);
  } else if (md.target != "cpu") {
    c.fail("device", "is missing (a " + md.target +
                         " artifact runs from its dispatch program)");
  }

  const JsonValue &tokenizer = c.get(root, "", "tokenizer");
  if (!tokenizer.isNull()) {
    if (!tokenizer.isObject())
      c.fail("tokenizer", "must be an object or null");
    std::string kind = c.getString(tokenizer, "tokenizer", "kind");
    if (kind != "llama2c" && kind != "llmc")
      c.fail("tokenizer.kind", "is \"" + kind +
                                   "\", expected \"llmc\" or \"llama2c\"");
    md.tokenizerKind = kind;
    md.tokenizerPath =
        joinPath(dir, c.getFileName(tokenizer, "tokenizer", "file"));
  }
  return md;
}

int64_t ArtifactMetadata::arenaBytes(int64_t n, int64_t pos0,
                                     int64_t nOut) const {
  const int64_t sizes[] = {n, pos0, nOut};
  // Past 2^48 bytes no allocation can succeed; the bound keeps the sums
  // far from overflow.
  const __int128 limit = __int128(1) << 48;
  __int128 largest = 0;
  for (const std::vector<ArenaTerm> &plan : arenaPlans) {
    __int128 total = 0;
    for (const ArenaTerm &term : plan) {
      __int128 v = term.bytes;
      for (int s : term.sizes)
        v *= sizes[s];
      total += v;
      if (total > limit)
        throw Error(metadataPath + ": the arena of a call of " +
                    std::to_string(n) + " tokens at pos0 = " +
                    std::to_string(pos0) + " exceeds 2^48 bytes");
    }
    largest = std::max(largest, total);
  }
  return static_cast<int64_t>(largest);
}

ArtifactMetadata readMetadata(const std::string &dir) {
  std::string path = joinPath(dir, "metadata.json");
  std::string text = readFile(path);
  JsonValue root;
  try {
    root = parseJson(text);
  } catch (const JsonError &e) {
    throw Error(path + ": " + e.what());
  }
  return validateMetadata(root, dir, path);
}

} // namespace llmc::rt
