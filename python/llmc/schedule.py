"""TIR-style schedules on the tl dialect, with a replayable trace.

Every primitive is the C++ transform that passes use (lib/Dialect/TL/
Transforms/Schedule.cpp); this module only names handles and records what was
done, so that a schedule can be printed as Python and replayed on a fresh
module:

    sch = llmc.Schedule(module)
    b = sch.get_block("matmul")
    i, j, k = sch.get_loops(b)
    jo, ji = sch.split(j, [-1, 8])
    sch.reorder([i, jo, k, ji])
    sch.parallel(i)
    print(sch.trace)                   # the same calls, as Python
    sch.trace.apply(fresh_module)      # replays them
"""
from . import _llmc


class _RV:
    """A random-variable-like name for a block or loop in a trace."""

    def __init__(self, kind, index, handle):
        self.kind, self.index, self.handle = kind, index, handle

    @property
    def name(self):
        return "%s%d" % ("b" if self.kind == "block" else "l", self.index)

    def __repr__(self):
        return self.name

    @property
    def location(self):
        return self.handle.location

    def __str__(self):
        return str(self.handle)


class Trace:
    """The primitives applied by a Schedule, in order."""

    def __init__(self):
        self.steps = []   # (method, args, results) with args/results of names

    def append(self, method, args, results):
        self.steps.append((method, args, results))

    def as_python(self, sch="sch"):
        def fmt(a):
            if isinstance(a, list):
                return "[" + ", ".join(fmt(x) for x in a) + "]"
            if isinstance(a, _Name):
                return a.name
            return repr(a)
        lines = []
        for method, args, results in self.steps:
            call = "%s.%s(%s)" % (sch, method, ", ".join(fmt(a) for a in args))
            if results:
                names = [r.name if r is not None else "_" for r in results]
                if method == "split" and len(args) > 2 and args[2] is True:
                    lhs = "(%s), %s" % (", ".join(names[:-1]) + ",", names[-1])
                else:
                    lhs = ", ".join(names)
                if len(results) == 1 and method in ("get_loops", "split", "reorder"):
                    lhs += ","
                lines.append("%s = %s" % (lhs, call))
            else:
                lines.append(call)
        return "\n".join(lines)

    __str__ = as_python

    def apply(self, module):
        """Replays the trace on `module` (changed in place); returns the
        Schedule that did it."""
        sch = Schedule(module)
        env = {}

        def resolve(a):
            if isinstance(a, list):
                return [resolve(x) for x in a]
            if isinstance(a, _Name):
                return env[a.name]
            return a
        for method, args, results in self.steps:
            out = getattr(sch, method)(*[resolve(a) for a in args])
            if results:
                if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], list):
                    outs = out[0] + [out[1]]          # split(peel=True)
                elif isinstance(out, (list, tuple)):
                    outs = list(out)
                else:
                    outs = [out]
                for name, rv in zip(results, outs):
                    if name is not None:
                        env[name.name] = rv
        return sch


class _Name:
    def __init__(self, name):
        self.name = name


class Schedule:
    """Schedules the tl loop nests of `module` in place."""

    def __init__(self, module):
        self.module = module
        self._native = _llmc.NativeSchedule(module)
        self.trace = Trace()
        self._counts = {"block": 0, "loop": 0}

    def _rv(self, kind, handle):
        rv = _RV(kind, self._counts[kind], handle)
        self._counts[kind] += 1
        return rv

    def _record(self, method, args, results):
        def name(a):
            if isinstance(a, list):
                return [name(x) for x in a]
            return _Name(a.name) if isinstance(a, _RV) else a
        self.trace.append(method, [name(a) for a in args],
                          [_Name(r.name) if r is not None else None for r in results])

    @staticmethod
    def _loop(rv, what):
        if not isinstance(rv, _RV) or rv.kind != "loop":
            raise TypeError("%s: expected a loop from get_loops/split/fuse, got %r" % (what, rv))
        return rv.handle

    def get_block(self, name, func=None):
        """The tl.block named `name` (in function `func`, e.g.
        "forward_decode", when the phases each have one)."""
        rv = self._rv("block", self._native.get_block(name, func or ""))
        self._record("get_block", [name] + ([func] if func else []), [rv])
        return rv

    def get_loops(self, block):
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("get_loops: expected a block from get_block, got %r" % (block,))
        loops = [self._rv("loop", h) for h in self._native.get_loops(block.handle)]
        self._record("get_loops", [block], loops)
        return loops

    def split(self, loop, factors, peel=False):
        """Splits a loop into len(factors) nested loops; a first factor of
        -1 (or None) is inferred. With `peel`, the loops cover only the whole
        multiples of the inner factors (constant inner extents, as vectorize
        and unroll need) and a copy of the loop runs the remaining
        iterations: returns (loops, tail loop or None)."""
        factors = [-1 if f is None else int(f) for f in factors]
        if peel:
            if factors[0] != -1:
                raise ValueError("split(peel=True): the first factor is inferred (-1 or None)")
            handles, tail = self._native.split_peel(self._loop(loop, "split"), factors[1:])
            loops = [self._rv("loop", h) for h in handles]
            tail = self._rv("loop", tail) if tail is not None else None
            self._record("split", [loop, factors, True], loops + [tail])
            return loops, tail
        loops = [self._rv("loop", h) for h in self._native.split(self._loop(loop, "split"), factors)]
        self._record("split", [loop, factors], loops)
        return loops

    def rfactor(self, block, lanes, root=None):
        """Factors reduction `block` over the loops `lanes` (a loop or a
        list): per-lane partials, accumulated by "<name>_rf" and combined
        into the output by "<name>" after the reduction; returns the blocks
        (rf, write_back, init). With `root` (a loop of the reduction), only
        the part from it inward is factored: the partials are added to the
        output after `root`, inside the reduction's outer loops (a reduction
        blocked for a cache)."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("rfactor: expected a block, got %r" % (block,))
        lanes = lanes if isinstance(lanes, list) else [lanes]
        handles = [self._loop(l, "rfactor") for l in lanes]
        root_handle = self._loop(root, "rfactor") if root is not None else None
        rf, wb, init = (self._rv("block", h)
                        for h in self._native.rfactor(block.handle, handles, root_handle))
        args = [block, list(lanes)] + ([root] if root is not None else [])
        self._record("rfactor", args, [rf, wb, init])
        return rf, wb, init

    def tree_reduce(self, block, segment=None):
        """Combines the partials of a write-back block (from rfactor) in a
        halving tree instead of in order; returns the final block. With
        `segment`, each run of `segment` lanes gets its own tree and the
        block adds the runs' results in order."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("tree_reduce: expected a block, got %r" % (block,))
        rv = self._rv("block", self._native.tree_reduce(block.handle, int(segment or 0)))
        self._record("tree_reduce", [block] + ([int(segment)] if segment else []), [rv])
        return rv

    def contract(self, block):
        """Makes reduction `block`'s update `acc + a * b` one fused
        multiply-add (one rounding)."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("contract: expected a block, got %r" % (block,))
        self._native.contract(block.handle)
        self._record("contract", [block], [])

    def reverse(self, loop):
        """Runs `loop` backwards (iteration i becomes extent - 1 - i)."""
        self._mark("reverse", loop)

    def reorder(self, loops):
        handles = [self._loop(l, "reorder") for l in loops]
        new = [self._rv("loop", h) for h in self._native.reorder(handles)]
        self._record("reorder", [list(loops)], new)
        return new

    def fuse(self, loops):
        handles = [self._loop(l, "fuse") for l in loops]
        rv = self._rv("loop", self._native.fuse(handles))
        self._record("fuse", [list(loops)], [rv])
        return rv

    def fuse_siblings(self, loops):
        """Fuses sibling loops (consecutive, equal bounds) into the first,
        each body in turn per iteration, where the fused loop's iterations
        are independent; returns the fused loop (the others are gone)."""
        handles = [self._loop(l, "fuse_siblings") for l in loops]
        rv = self._rv("loop", self._native.fuse_siblings(handles))
        self._record("fuse_siblings", [list(loops)], [rv])
        return rv

    def fuse_launches(self, loops):
        """Fuses GPU launches (the top loops of consecutive top-level nests,
        mapped onto grids, none touching what another writes) into one
        launch of the sum of their workgroups, each running the part its
        index falls in; returns the fused nest's top loop."""
        handles = [self._loop(l, "fuse_launches") for l in loops]
        rv = self._rv("loop", self._native.fuse_launches(handles))
        self._record("fuse_launches", [list(loops)], [rv])
        return rv

    def decompose_reduction(self, block, loop):
        """Moves the init of reduction `block` into a new block
        "<name>_init" right before `loop` (which must enclose only reduction
        loops of the block); returns the new block."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("decompose_reduction: expected a block, got %r" % (block,))
        rv = self._rv("block", self._native.decompose_reduction(
            block.handle, self._loop(loop, "decompose_reduction")))
        self._record("decompose_reduction", [block, loop], [rv])
        return rv

    def compute_at(self, block, loop):
        """Moves producer `block` under `loop` (of a later nest), computing
        per iteration only the part of its output read there; returns the
        moved block (the old handle is gone)."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("compute_at: expected a block, got %r" % (block,))
        rv = self._rv("block", self._native.compute_at(
            block.handle, self._loop(loop, "compute_at")))
        self._record("compute_at", [block, loop], [rv])
        return rv

    def reverse_compute_inline(self, block, into_reduction=False):
        """Computes elementwise `block` where its producer stores each element
        of the buffer it reads (TVM's reverse_compute_inline); `block`, its
        loop nest and the intermediate buffer are gone afterwards. With
        `into_reduction`, a producer that sums into the buffer takes a
        `block` adding one value to each element (z = y + x) into its init."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("reverse_compute_inline: expected a block, got %r" % (block,))
        self._native.reverse_compute_inline(block.handle, bool(into_reduction))
        self._record("reverse_compute_inline",
                     [block] + ([True] if into_reduction else []), [])

    def distribute(self, loop):
        """Splits `loop` into one loop per loop nest or block of its body, in
        order (loop distribution); returns the new loops."""
        rvs = [self._rv("loop", h) for h in self._native.distribute(self._loop(loop, "distribute"))]
        self._record("distribute", [loop], rvs)
        return rvs

    def expand(self, block, write, loop):
        """Allocates stack buffer `block.writes[write]`, made in `loop`'s body
        for each iteration, once before the loop with a leading dimension
        of the loop's extent: each iteration its own slice."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("expand: expected a block, got %r" % (block,))
        self._native.expand(block.handle, int(write), self._loop(loop, "expand"))
        self._record("expand", [block, int(write), loop], [])

    def hoist(self, block, widening, loop):
        """Computes the operand of `block`'s `widening`-th widening (its
        arith.extui/extsi/extf in body order) once per iteration of `loop`,
        for the iterations of the loops inside `loop` that it uses, into a
        stack buffer that `block` loads instead (a weight's unpacking done
        once per row group, not once per token); returns the block that
        computes it."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("hoist: expected a block, got %r" % (block,))
        rv = self._rv("block", self._native.hoist(
            block.handle, int(widening), self._loop(loop, "hoist")))
        self._record("hoist", [block, int(widening), loop], [rv])
        return rv

    def compute_inline(self, block):
        """Computes spatial `block`'s elements where its consumers load them
        (TVM's compute_inline); `block`, its loop nest and the buffer it
        writes are gone afterwards."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("compute_inline: expected a block, got %r" % (block,))
        self._native.compute_inline(block.handle)
        self._record("compute_inline", [block], [])

    def _cache(self, method, block, index):
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("%s: expected a block, got %r" % (method, block))
        rv = self._rv("block", getattr(self._native, method)(block.handle, int(index)))
        self._record(method, [block, int(index)], [rv])
        return rv

    def cache_read(self, block, read_index):
        """Makes `block` read its `read_index`-th read buffer from a copy
        filled just before its loop nest; returns the copy block."""
        return self._cache("cache_read", block, read_index)

    def cache_write(self, block, write_index):
        """Makes `block` write its `write_index`-th write buffer into a
        copy, stored back just after its loop nest; returns the copy block."""
        return self._cache("cache_write", block, write_index)

    def split_halves(self, block, read_index):
        """Holds the f32 values `block` multiplies from its `read_index`-th
        read as two f16 halves (hi + lo) written by a nest before its own;
        returns the halves' block."""
        return self._cache("split_halves", block, read_index)

    def dequant_halves(self, block):
        """Writes `block`'s weight (a quantized matrix's elements, computed
        from its bytes, or a bf16/f32 matrix's) once, by a nest of its own,
        as two f16 halves [N, K]; the block then reads them along one
        reduction loop over K. Returns the weight's block."""
        if not isinstance(block, _RV) or block.kind != "block":
            raise TypeError("dequant_halves: expected a block, got %r" % (block,))
        rv = self._rv("block", self._native.dequant_halves(block.handle))
        self._record("dequant_halves", [block], [rv])
        return rv

    def mma(self, loop):
        """Marks the matrix band rooted at `loop` (rows, columns, the
        reduction around one f16 product block) to run on a GPU's matrix
        units."""
        self._mark("mma", loop)

    def library(self, loop):
        """Marks the matrix band rooted at `loop` (a whole nest at the top
        of its function; its rows may run to any bound) to be computed by
        the target's GEMM library (cuBLAS: `--target cuda:sm_NN,+cublas`)."""
        self._mark("library", loop)

    def _mark(self, method, loop, *extra):
        getattr(self._native, method)(self._loop(loop, method), *extra)
        self._record(method, [loop] + list(extra), [])

    def parallel(self, loop):
        self._mark("parallel", loop)

    def vectorize(self, loop):
        self._mark("vectorize", loop)

    def unroll(self, loop):
        self._mark("unroll", loop)

    def bind(self, loop, thread):
        self._mark("bind", loop, thread)
