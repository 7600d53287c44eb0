//===- ScheduleScript.cpp - tl-schedule: primitives from a script ---------===//
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Dialect/TL/Transforms/Schedule.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/StringExtras.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLSCHEDULE
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc::tl;

namespace {

/// One statement: `name(arg, arg, ...)`.
struct Call {
  std::string name;
  SmallVector<std::string> args;
};

FailureOr<SmallVector<Call>> parseScript(StringRef script, Operation *root) {
  SmallVector<Call> calls;
  SmallVector<StringRef> statements;
  script.split(statements, ';', -1, /*KeepEmpty=*/false);
  for (StringRef st : statements) {
    st = st.trim();
    if (st.empty())
      continue;
    size_t open = st.find('(');
    if (open == StringRef::npos || !st.ends_with(")"))
      return root->emitError("tl-schedule: expected `primitive(args)`, got '")
             << st << "'";
    Call c;
    c.name = st.take_front(open).trim().str();
    SmallVector<StringRef> args;
    st.drop_front(open + 1).drop_back().split(args, ',', -1, false);
    for (StringRef a : args)
      c.args.push_back(a.trim().str());
    calls.push_back(std::move(c));
  }
  return calls;
}

struct TLSchedulePass : llmc::tl::impl::TLScheduleBase<TLSchedulePass> {
  using Base::Base;

  LogicalResult apply(const Call &c, Operation *root, RewriterBase &rw) {
    auto argError = [&](const Twine &msg) {
      return root->emitError("tl-schedule: ") << c.name << ": " << msg;
    };
    if (c.args.empty())
      return argError("needs a block name");
    // fuse_siblings(block, loop, block, loop, ...): a loop of each block.
    if (c.name == "fuse_siblings") {
      if (c.args.size() < 4 || c.args.size() % 2)
        return argError("needs (block, loop) pairs, at least two");
      SmallVector<ForOp> ls;
      for (size_t i = 0; i < c.args.size(); i += 2) {
        FailureOr<BlockOp> b = getBlock(root, c.args[i]);
        if (failed(b))
          return failure();
        int64_t at;
        SmallVector<ForOp> loops = getLoops(*b);
        if (StringRef(c.args[i + 1]).getAsInteger(10, at) || at < 0 ||
            at >= (int64_t)loops.size())
          return argError("'" + c.args[i + 1] + "' is not a loop of tl.block '" +
                          c.args[i] + "'");
        ls.push_back(loops[at]);
      }
      return fuseSiblings(rw, ls);
    }
    // fuse_launches(block, block, ...): the top-level nest of each block.
    if (c.name == "fuse_launches") {
      SmallVector<ForOp> nests;
      for (const std::string &name : c.args) {
        FailureOr<BlockOp> b = getBlock(root, name);
        if (failed(b))
          return failure();
        SmallVector<ForOp> loops = getLoops(*b);
        if (loops.empty())
          return argError("tl.block '" + name + "' is in no loop nest");
        nests.push_back(loops.front());
      }
      return fuseLaunches(rw, nests);
    }
    FailureOr<BlockOp> block = getBlock(root, c.args[0]);
    if (failed(block))
      return failure();
    SmallVector<int64_t> ints;
    for (const std::string &a : llvm::drop_begin(c.args)) {
      int64_t v;
      if (StringRef(a).getAsInteger(10, v)) {
        if (c.name == "bind" && &a == &c.args.back())
          continue;
        return argError("'" + a + "' is not an integer");
      }
      ints.push_back(v);
    }
    SmallVector<ForOp> loops = getLoops(*block);
    auto loopAt = [&](int64_t i) -> FailureOr<ForOp> {
      if (i < 0 || i >= (int64_t)loops.size())
        return argError("tl.block '" + c.args[0] + "' has " +
                        Twine(loops.size()) + " loops, no loop " + Twine(i));
      return loops[i];
    };
    auto needs = [&](size_t n) -> LogicalResult {
      if (ints.size() < n)
        return argError("needs " + Twine(n) + " loop/factor arguments");
      return success();
    };
    if (c.name == "split" || c.name == "split_peel") {
      if (failed(needs(2)))
        return failure();
      auto l = loopAt(ints[0]);
      if (failed(l))
        return failure();
      if (c.name == "split_peel")
        return splitPeel(rw, *l, ArrayRef<int64_t>(ints).drop_front());
      SmallVector<int64_t> factors = {-1};
      llvm::append_range(factors, ArrayRef<int64_t>(ints).drop_front());
      return split(rw, *l, factors);
    }
    if (c.name == "reorder" || c.name == "fuse" || c.name == "rfactor" ||
        c.name == "rfactor_at") {
      // (rfactor over no loops: one accumulator per output element;
      // rfactor_at's first loop is the root of the part factored.)
      bool at = c.name == "rfactor_at";
      if (failed(needs(c.name == "rfactor" ? 0 : 1)))
        return failure();
      ForOp root;
      if (at) {
        auto l = loopAt(ints.front());
        if (failed(l))
          return failure();
        root = *l;
        ints.erase(ints.begin());
      }
      SmallVector<ForOp> ls;
      for (int64_t i : ints) {
        auto l = loopAt(i);
        if (failed(l))
          return failure();
        ls.push_back(*l);
      }
      if (c.name == "reorder")
        return reorder(rw, ls);
      if (c.name == "fuse")
        return fuse(rw, ls);
      return rfactor(rw, *block, ls, root);
    }
    if (c.name == "tree_reduce")
      return treeReduce(rw, *block, ints.empty() ? 0 : ints[0]);
    if (c.name == "contract")
      return contract(rw, *block);
    if (c.name == "reverse_compute_inline")
      return reverseComputeInline(rw, *block);
    if (c.name == "absorb_add")
      return reverseComputeInline(rw, *block, /*quiet=*/false,
                                  /*intoReduction=*/true);
    if (c.name == "compute_inline")
      return computeInline(rw, *block);
    // stage(block, r, loop): the block's read r, staged at its loop.
    if (c.name == "stage") {
      if (failed(needs(2)))
        return failure();
      if (ints[0] < 0 || ints[0] >= (int64_t)block->getReads().size())
        return argError("tl.block '" + c.args[0] + "' has no read " +
                        Twine(ints[0]));
      auto l = loopAt(ints[1]);
      return failed(l) ? failure()
                       : LogicalResult(stage(rw, *block, ints[0], *l));
    }
    // hoist(block, e, loop): the operand of the block's widening e (its
    // e-th arith.extui/extsi/extf in body order), hoisted at its loop.
    if (c.name == "hoist") {
      if (failed(needs(2)))
        return failure();
      SmallVector<Operation *> widenings = getWidenings(*block);
      if (ints[0] < 0 || ints[0] >= (int64_t)widenings.size())
        return argError("tl.block '" + c.args[0] + "' has no widening " +
                        Twine(ints[0]));
      auto l = loopAt(ints[1]);
      return failed(l)
                 ? failure()
                 : LogicalResult(hoistValue(
                       rw, *block, widenings[ints[0]]->getOperand(0), *l));
    }
    // expand(block, w, loop): the block's write buffer w, along its loop.
    if (c.name == "expand") {
      if (failed(needs(2)))
        return failure();
      if (ints[0] < 0 || ints[0] >= (int64_t)block->getWrites().size())
        return argError("tl.block '" + c.args[0] + "' has no write " +
                        Twine(ints[0]));
      auto l = loopAt(ints[1]);
      return failed(l) ? failure()
                       : LogicalResult(expand(rw, block->getWrites()[ints[0]], *l));
    }
    if (c.name == "distribute") {
      if (failed(needs(1)))
        return failure();
      auto l = loopAt(ints[0]);
      return failed(l) ? failure() : LogicalResult(distribute(rw, *l));
    }
    if (c.name == "reverse") {
      if (failed(needs(1)))
        return failure();
      auto l = loopAt(ints[0]);
      return failed(l) ? failure() : reverse(rw, *l);
    }
    if (c.name == "decompose_reduction") {
      if (failed(needs(1)))
        return failure();
      auto l = loopAt(ints[0]);
      return failed(l) ? failure()
                       : LogicalResult(decomposeReduction(rw, *block, *l));
    }
    if (c.name == "dequant_halves") {
      if (failed(needs(0)))
        return failure();
      return LogicalResult(dequantHalves(rw, *block));
    }
    if (c.name == "split_halves") {
      if (failed(needs(1)))
        return failure();
      return splitHalves(rw, *block, ints[0]);
    }
    if (c.name == "parallel" || c.name == "vectorize" || c.name == "unroll" ||
        c.name == "bind" || c.name == "mma" || c.name == "library") {
      if (failed(needs(1)))
        return failure();
      auto l = loopAt(ints[0]);
      if (failed(l))
        return failure();
      if (c.name == "parallel")
        return parallel(*l);
      if (c.name == "vectorize")
        return vectorize(*l);
      if (c.name == "unroll")
        return unroll(*l);
      if (c.name == "mma")
        return mma(*l);
      if (c.name == "library")
        return library(*l);
      return llmc::tl::bind(*l, c.args.back());
    }
    return argError("unknown primitive");
  }

  void runOnOperation() override {
    Operation *root = getOperation();
    auto calls = parseScript(script, root);
    if (failed(calls))
      return signalPassFailure();
    IRRewriter rw(&getContext());
    for (const Call &c : *calls)
      if (failed(apply(c, root, rw)))
        return signalPassFailure();
  }
};
} // namespace
