"""The tl schedule primitives from Python: each one's effect, each
precondition's failure (a located llmc.Error, IR unchanged), the trace, and
numerical equivalence of scheduled models."""
import numpy as np
import pytest

MATMUL = """
func.func @mm(%x: tensor<?x64xf32>, %w: tensor<32x64xf32>) -> tensor<?x32xf32> {
  %0 = graph.matmul %x, %w : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}
"""

# Hand-written tl with the shapes the failure cases need.
LOOPS = """
func.func @f(%x: memref<8x16xf32>, %y: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  tl.for %i = %c0 to %c8 step %c1 {
    tl.for %k = %c0 to %c16 step %c1 {
      tl.block "sum" (%vi = spatial %i, %vk = reduce %k)
          reads(%x[%vi, %vk] : memref<8x16xf32>, %y[%vi] : memref<8xf32>)
          writes(%y[%vi] : memref<8xf32>) {
        %a = affine.load %x[%vi, %vk] : memref<8x16xf32>
        %s = affine.load %y[%vi] : memref<8xf32>
        %r = arith.addf %a, %s : f32
        affine.store %r, %y[%vi] : memref<8xf32>
      }
    }
  }
  tl.for %t = %c2 to %c8 step %c1 {
    tl.for %u = %c0 to %t step %c1 {
      tl.block "tri" (%vt = spatial %t, %vu = spatial %u) reads() writes(%x[%vt, %vu] : memref<8x16xf32>) {
        %z = arith.constant 0.0 : f32
        affine.store %z, %x[%vt, %vu] : memref<8x16xf32>
      }
    }
  }
  tl.for %r = %c0 to %n step %c1 {
    tl.for %j = %c0 to %c8 step %c1 {
      tl.block "same" (%vj = spatial %j) reads() writes(%y[%vj] : memref<8xf32>) {
        %z = arith.constant 1.0 : f32
        affine.store %z, %y[%vj] : memref<8xf32>
      }
    }
  }
  return
}
"""


def tl_matmul(llmc):
    m = llmc.parse(MATMUL)
    llmc.PassManager("tl", schedule="none").run(m)
    return m


@pytest.fixture
def loops_module(llmc):
    return llmc.parse(LOOPS)


def fails(llmc, fn, *needles):
    with pytest.raises(llmc.Error) as e:
        fn()
    for n in needles:
        assert n in str(e.value), str(e.value)
    return str(e.value)


# A model's tl has the decode step (one token: no token loop) and the prefill
# as two functions with the same blocks.
PHASES = ("forward_prefill", "forward_decode")


def numbered(sch, base, func):
    """The blocks base, base_1, base_2, ... of function `func`."""
    import llmc
    n = 0
    while True:
        try:
            yield sch.get_block(base if n == 0 else "%s_%d" % (base, n), func)
        except llmc.Error:
            return
        n += 1


def reduction_innermost(sch, block):
    """The loops of a matmul block with its reduction innermost. The exact
    mode's f32 products over rows interleaved for the lanes (.., groups, k,
    rows) put the group's rows (a spatial loop) inside the reduction: they
    move outside it, giving the (.., outputs, k) shape of a plain weight."""
    import re
    header = str(block).split(") reads(")[0]
    kinds = re.findall(r"= (spatial|reduce) ", header)
    loops = sch.get_loops(block)
    if kinds and kinds[-1] == "spatial" and "reduce" in kinds:
        *outer, k, rows = loops
        loops = outer + sch.reorder([rows, k])
    return loops


def canonical(sch):
    """A schedule that leaves the canonical nests (no default schedule)."""


# ---- each primitive works -------------------------------------------------------

def test_get_block_and_loops(llmc):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    b = sch.get_block("matmul")
    loops = sch.get_loops(b)
    assert len(loops) == 3
    # Canonical nests: every loop serial, the schedule decides.
    assert "kind(" not in str(loops[0]).splitlines()[0]
    assert "<string>" in b.location


def test_split_static_and_partial(llmc):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    jo, ji = sch.split(j, [-1, 8])          # 32 = 4 x 8: no remainder
    ko, km, ki = sch.split(k, [None, 3, 5])  # 64 = 5 x 15 - 11: partial tiles
    m.verify()
    text = str(m)
    assert "arith.minui" in text              # the partial inner bound
    assert len(sch.get_loops(sch.get_block("matmul"))) == 6


def test_split_dynamic_extent(llmc):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    io, ii = sch.split(i, [-1, 4])
    m.verify()
    assert "arith.ceildivui" in str(m)


def test_reorder_fuse_and_kinds(llmc):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    jo, ji = sch.split(j, [-1, 8])
    i2, jo2, k2, ji2 = sch.reorder([i, jo, k, ji])
    sch.parallel(i2)
    sch.vectorize(ji2)
    m.verify()
    loops = sch.get_loops(sch.get_block("matmul"))
    heads = [str(l).splitlines()[0] for l in loops]
    assert "kind(parallel)" in heads[0] and "kind(vectorized)" in heads[3]
    f = sch.fuse([loops[0], loops[1]])
    m.verify()
    assert len(sch.get_loops(sch.get_block("matmul"))) == 3
    assert "arith.remui" in str(m) and "arith.divui" in str(m)


def test_unroll_and_bind(llmc):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    sch.unroll(k)
    sch.bind(j, "threadIdx.x")
    m.verify()
    assert 'kind(thread_bound) thread("threadIdx.x")' in str(m)
    assert "kind(unrolled)" in str(m)


# ---- preconditions -------------------------------------------------------------

def test_get_block_errors(llmc, loops_module):
    sch = llmc.Schedule(loops_module)
    fails(llmc, lambda: sch.get_block("nope"), "no tl.block named 'nope'")
    dup = llmc.parse(LOOPS.replace('"tri"', '"sum"'))
    fails(llmc, lambda: llmc.Schedule(dup).get_block("sum"), "2 tl.blocks are named 'sum'")


def test_split_errors(llmc, loops_module):
    before = str(loops_module)
    sch = llmc.Schedule(loops_module)
    i, k = sch.get_loops(sch.get_block("sum"))
    t, u = sch.get_loops(sch.get_block("tri"))
    fails(llmc, lambda: sch.split(i, [0, 4]), "factors must be positive")
    fails(llmc, lambda: sch.split(i, [2, -1]), "factors must be positive")
    fails(llmc, lambda: sch.split(i, [4]), "at least two factors")
    fails(llmc, lambda: sch.split(i, [2, 2]), "factors cover 4 iterations of a loop of 8")
    fails(llmc, lambda: sch.split(t, [-1, 2]), "must start at 0 with step 1", "<string>:")
    fails(llmc, lambda: sch.split(u, [3, 2]), "extent is dynamic")
    assert str(loops_module) == before


def test_reorder_errors(llmc, loops_module):
    before = str(loops_module)
    sch = llmc.Schedule(loops_module)
    i, k = sch.get_loops(sch.get_block("sum"))
    t, u = sch.get_loops(sch.get_block("tri"))
    fails(llmc, lambda: sch.reorder([u, t]), "depend on another loop of the nest")
    fails(llmc, lambda: sch.reorder([i, t]), "directly nested")
    fails(llmc, lambda: sch.reorder([k, k]), "listed twice")
    assert str(loops_module) == before


def test_fuse_errors(llmc, loops_module):
    before = str(loops_module)
    sch = llmc.Schedule(loops_module)
    i, k = sch.get_loops(sch.get_block("sum"))
    t, u = sch.get_loops(sch.get_block("tri"))
    fails(llmc, lambda: sch.fuse([t, u]), "must start at 0 with step 1")
    fails(llmc, lambda: sch.fuse([i, t]), "directly nested")
    assert str(loops_module) == before


def test_kind_errors(llmc, loops_module):
    before = str(loops_module)
    sch = llmc.Schedule(loops_module)
    i, k = sch.get_loops(sch.get_block("sum"))
    r, j = sch.get_loops(sch.get_block("same"))
    msg = fails(llmc, lambda: sch.parallel(k), "carries reduction variable 1 of tl.block 'sum'")
    assert "note: the block is here" in msg
    fails(llmc, lambda: sch.parallel(r), "writes the same elements in tl.block 'same'")
    fails(llmc, lambda: sch.vectorize(i), "must be vectorized first")
    fails(llmc, lambda: sch.vectorize(r), "must run from 0 to a constant")
    fails(llmc, lambda: sch.unroll(r), "bounds must be constants")
    fails(llmc, lambda: sch.bind(i, "warp.x"), "unknown thread axis 'warp.x'")
    fails(llmc, lambda: sch.bind(k, "threadIdx.x"), "reduction variable")
    assert str(loops_module) == before


def test_wrong_handle_kinds(llmc):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    b = sch.get_block("matmul")
    with pytest.raises(TypeError):
        sch.split(b, [-1, 2])
    with pytest.raises(TypeError):
        sch.get_loops(sch.get_loops(b)[0])


# ---- trace ---------------------------------------------------------------------

def schedule_matmul(sch):
    i, j, k = sch.get_loops(sch.get_block("matmul"))
    jo, ji = sch.split(j, [-1, 8])
    i, jo, k, ji = sch.reorder([i, jo, k, ji])
    sch.vectorize(ji)


def test_trace_prints_python_and_replays(llmc):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    schedule_matmul(sch)
    text = str(sch.trace)
    assert text.splitlines() == [
        "b0 = sch.get_block('matmul')",
        "l0, l1, l2 = sch.get_loops(b0)",
        "l3, l4 = sch.split(l1, [-1, 8])",
        "l5, l6, l7, l8 = sch.reorder([l0, l3, l2, l4])",
        "sch.vectorize(l8)",
    ]
    fresh = tl_matmul(llmc)
    sch.trace.apply(fresh)
    assert str(fresh) == str(m)
    # The printed trace is Python that does the same.
    again = tl_matmul(llmc)
    exec(text, {"sch": llmc.Schedule(again)})
    assert str(again) == str(m)


def test_python_schedule_equals_pass(llmc):
    """tl-vectorize makes the same decisions through the same primitives."""
    by_pass = tl_matmul(llmc)
    llmc.PassManager("builtin.module(func.func(tl-vectorize{width=8}))").run(by_pass)
    by_python = tl_matmul(llmc)
    sch = llmc.Schedule(by_python)
    # The pass splits innermost spatial loops only: here none (k reduces), so
    # the matmul is left alone, as the Python side does by not touching it.
    assert str(by_pass) == str(by_python)

    elementwise = """
func.func @f(%x: tensor<?x32xf32>, %b: tensor<32xf32>) -> tensor<?x32xf32> {
  %0 = graph.add %x, %b : tensor<?x32xf32>, tensor<32xf32>
  return %0 : tensor<?x32xf32>
}"""
    p = llmc.parse(elementwise)
    llmc.PassManager("tl", schedule="none").run(p)
    llmc.PassManager("builtin.module(func.func(tl-vectorize{width=8}))").run(p)
    q = llmc.parse(elementwise)
    llmc.PassManager("tl", schedule="none").run(q)
    sch = llmc.Schedule(q)
    s, j = sch.get_loops(sch.get_block("add"))
    jo, ji = sch.split(j, [-1, 8])
    sch.vectorize(ji)
    assert str(p) == str(q)
    assert "kind(vectorized)" in str(q)


# ---- scheduled models compute the same numbers ------------------------------------

def test_scheduled_model_matches_default(llmc, tiny_model, tmp_path):
    m = llmc.import_model(tiny_model)
    traces = []

    def schedule(sch):
        for f in PHASES:
            for b in numbered(sch, "matmul", f):
                *tokens, j, k = sch.get_loops(b)
                jo, ji = sch.split(j, [-1, 4])
                sch.reorder([jo] + tokens + [k, ji])
        traces.append(sch.trace)

    scheduled = llmc.compile(m, tmp_path / "sched", schedule=schedule)
    default = llmc.compile(m, tmp_path / "default", schedule=canonical)
    assert "reorder" in str(traces[0])
    ids = [(i * 7 + 3) % 300 for i in range(24)]
    a = llmc.Runtime(scheduled).logits(ids)
    b = llmc.Runtime(default).logits(ids)
    # Spatial splits and reorders keep every reduction's order: bit-identical.
    np.testing.assert_array_equal(a, b)


def test_schedule_exception_propagates(llmc, tiny_model, tmp_path):
    def bad(sch):
        raise ValueError("my schedule broke")
    with pytest.raises(ValueError, match="my schedule broke"):
        llmc.compile(llmc.import_model(tiny_model), tmp_path / "x", schedule=bad)
    assert not (tmp_path / "x").exists()


# ---- decompose_reduction and unrolling -------------------------------------------

def test_decompose_reduction(llmc):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    b = sch.get_block("matmul")
    s, j, k = sch.get_loops(b)
    init = sch.decompose_reduction(b, k)
    m.verify()
    text = str(m)
    assert 'tl.block "matmul_init"' in text
    # The update block lost its init; the init block sits before the k loop.
    assert text.count(" init {") == 0
    assert len(sch.get_loops(init)) == 2
    assert "decompose_reduction(b0, l2)" in str(sch.trace)


def test_decompose_reduction_errors(llmc, loops_module):
    before = str(loops_module)
    sch = llmc.Schedule(loops_module)
    b = sch.get_block("sum")
    i, k = sch.get_loops(b)
    fails(llmc, lambda: sch.decompose_reduction(b, k), "has no init")
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    b = sch.get_block("matmul")
    s, j, k = sch.get_loops(b)
    fails(llmc, lambda: sch.decompose_reduction(b, j),
          "spatial variable 1 of tl.block 'matmul' is bound inside the loop")
    other = llmc.Schedule(loops_module)
    t, u = other.get_loops(other.get_block("tri"))
    fails(llmc, lambda: sch.decompose_reduction(b, t), "does not enclose")
    assert str(loops_module) == before


def test_unrolled_and_decomposed_model_matches_default(llmc, tiny_model, tmp_path):
    m = llmc.import_model(tiny_model)

    def schedule(sch):
        for f in PHASES:
            b = sch.get_block("matmul", f)          # q projection: register tiles
            *tokens, j, k = reduction_innermost(sch, b)
            jo, ji = sch.split(j, [-1, 8])
            *_, ji = sch.reorder(tokens + [jo, k, ji])
            sch.unroll(ji)
            b1 = sch.get_block("matmul_1", f)       # k projection: init hoisted
            *_, k = reduction_innermost(sch, b1)
            sch.decompose_reduction(b1, k)

    a = llmc.Runtime(llmc.compile(m, tmp_path / "s", schedule=schedule))
    b = llmc.Runtime(llmc.compile(m, tmp_path / "d", schedule=canonical))
    ids = [(i * 11 + 5) % 300 for i in range(20)]
    np.testing.assert_array_equal(a.logits(ids), b.logits(ids))


# ---- cache_read / cache_write --------------------------------------------------

F16_PRODUCT = """
func.func @p(%x: memref<32x32xf32>, %w: memref<16x32xf16>, %y: memref<32x16xf32>) {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %t = %c0 to %c32 step %c1 {
    tl.for %o = %c0 to %c16 step %c1 {
      tl.for %i = %c0 to %c32 step %c1 {
        tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vi = reduce %i)
            reads(%x[%vt, %vi] : memref<32x32xf32>, %w[%vo, %vi] : memref<16x32xf16>,
                  %y[%vt, %vo] : memref<32x16xf32>)
            writes(%y[%vt, %vo] : memref<32x16xf32>) init {
          affine.store %cst, %y[%vt, %vo] : memref<32x16xf32>
        } {
          %a = affine.load %x[%vt, %vi] : memref<32x32xf32>
          %b = affine.load %w[%vo, %vi] : memref<16x32xf16>
          %e = arith.extf %b : f16 to f32
          %s = affine.load %y[%vt, %vo] : memref<32x16xf32>
          %p = arith.mulf %a, %e : f32
          %r = arith.addf %s, %p : f32
          affine.store %r, %y[%vt, %vo] : memref<32x16xf32>
        }
      }
    }
  }
  return
}
"""


def test_split_halves_and_mma(llmc):
    """A product of f32 activations and an f16 weight: its activations as
    two f16 halves, then its loops a matrix band (kind mma); before the
    split the band refuses the f32 operand."""
    m = llmc.parse(F16_PRODUCT)
    sch = llmc.Schedule(m)
    t, o, i = sch.get_loops(sch.get_block("matmul"))
    fails(llmc, lambda: sch.mma(t), "mma: the block must add the product of two f16 values")
    halves = sch.split_halves(sch.get_block("matmul"), 0)
    assert len(sch.get_loops(halves)) == 2  # its own nest over the activations
    t, o, i = sch.get_loops(sch.get_block("matmul"))
    sch.mma(t)
    m.verify()
    text = str(m)
    assert text.count("kind(mma)") == 3 and 'tl.block "matmul_halves"' in text
    assert "split_halves" in str(sch.trace) and "mma" in str(sch.trace)



def test_split_halves_and_library(llmc):
    """The same product for the GEMM library: after the split, its loops a
    band of kind library (a whole nest at the top of its function), recorded
    in the trace; before it the library refuses the f32 operand too."""
    m = llmc.parse(F16_PRODUCT)
    sch = llmc.Schedule(m)
    t, o, i = sch.get_loops(sch.get_block("matmul"))
    fails(llmc, lambda: sch.library(t),
          "library: the block must add the product of two f16 values")
    sch.split_halves(sch.get_block("matmul"), 0)
    t, o, i = sch.get_loops(sch.get_block("matmul"))
    sch.library(t)
    m.verify()
    assert str(m).count("kind(library)") == 3
    assert "library" in str(sch.trace)



@pytest.mark.parametrize("qtype", ["q8_0", "q4_0"])
def test_dequant_halves_in_a_model(llmc, tmp_path, qtype):
    """A quantized model's prompt products with their weights written as f16
    halves first (dequant_halves: hi + lo * 2^-11 holds each element
    exactly), with and without the activations split too (three products,
    the matrix units' form), on the CPU: the logits of the canonical nests
    but for the rounding of the split sums."""
    import gguf_writer
    import make_hf_model
    hf = tmp_path / "hf"
    make_hf_model.make_model(str(hf), arch="llama", tied=False, dtype="f32", seed=9)
    gguf = tmp_path / "model.gguf"
    gguf_writer.hf_to_gguf(str(hf), str(gguf), {"q8_0": gguf_writer.GGML_Q8_0,
                                                  "q4_0": gguf_writer.GGML_Q4_0}[qtype])
    m = llmc.import_model(str(gguf))
    weights = []

    def schedule(split):
        def apply(sch):
            n = len(list(numbered(sch, "matmul", "forward_prefill")))
            for i in range(n):
                name = "matmul" if i == 0 else "matmul_%d" % i
                b = sch.get_block(name, "forward_prefill")
                if split:
                    sch.split_halves(b, 0)  # (a new block of the same name)
                    b = sch.get_block(name, "forward_prefill")
                weights.append(sch.dequant_halves(b))
        return apply

    ids = [(i * 7 + 3) % 300 for i in range(20)]
    ref = llmc.Runtime(llmc.compile(m, tmp_path / "d", schedule=canonical)).logits(ids)
    for split in (False, True):
        weights.clear()
        got = llmc.Runtime(llmc.compile(m, tmp_path / ("s%d" % split),
                                        schedule=schedule(split))).logits(ids)
        assert len(weights) >= 7  # every layer's products and the head
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-5 * np.abs(ref).max())


RESIDUAL = """
func.func @r(%h: memref<1x64xf32>, %w: memref<32x64xf16>, %x: memref<1x32xf32>, %z: memref<1x32xf32>) {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c64 step %c1 {
      tl.block "matmul" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i)
          reads(%h[%vt, %vi] : memref<1x64xf32>, %w[%vo, %vi] : memref<32x64xf16>,
                %y[%vt, %vo] : memref<1x32xf32>)
          writes(%y[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %y[%vt, %vo] : memref<1x32xf32>
      } {
        %a = affine.load %h[%vt, %vi] : memref<1x64xf32>
        %b = affine.load %w[%vo, %vi] : memref<32x64xf16>
        %e = arith.extf %b : f16 to f32
        %s = affine.load %y[%vt, %vo] : memref<1x32xf32>
        %p = arith.mulf %a, %e : f32
        %r = arith.addf %s, %p : f32
        affine.store %r, %y[%vt, %vo] : memref<1x32xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    tl.block "add" (%vt = spatial %c0, %vo = spatial %o)
        reads(%x[%vt, %vo] : memref<1x32xf32>, %y[%vt, %vo] : memref<1x32xf32>)
        writes(%z[%vt, %vo] : memref<1x32xf32>) {
      %a = affine.load %x[%vt, %vo] : memref<1x32xf32>
      %b = affine.load %y[%vt, %vo] : memref<1x32xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %z[%vt, %vo] : memref<1x32xf32>
    }
  }
  return
}
"""


def test_reverse_compute_inline_into_a_reduction(llmc):
    """A residual add after a product: refused as an ordinary
    reverse_compute_inline (its producer reduces), taken into the product's
    init with into_reduction; the trace replays it."""
    m = llmc.parse(RESIDUAL)
    sch = llmc.Schedule(m)
    fails(llmc, lambda: sch.reverse_compute_inline(sch.get_block("add")),
          "has reduction variables")
    sch.reverse_compute_inline(sch.get_block("add"), into_reduction=True)
    m.verify()
    text = str(m)
    assert 'tl.block "add"' not in text and "memref.alloc" not in text
    assert "reverse_compute_inline" in str(sch.trace) and "True" in str(sch.trace)


def test_cache_read_and_write(llmc, tiny_model, tmp_path):
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    b = sch.get_block("matmul")
    r = sch.cache_read(b, 1)           # the weight
    w = sch.cache_write(b, 0)          # the output
    m.verify()
    text = str(m)
    assert 'tl.block "matmul_cache_read"' in text and 'tl.block "matmul_cache_write"' in text
    # The copy-in runs before the matmul nest, the copy-out after it.
    assert text.index("matmul_cache_read") < text.index('"matmul" (') < text.index("matmul_cache_write")
    assert text.count("memref.dealloc") >= 2
    # And numbers do not change in a compiled model.
    model = llmc.import_model(tiny_model)

    def schedule(sch):
        for f in PHASES:
            b = sch.get_block("matmul_2", f)
            sch.cache_read(b, 0)
            sch.cache_write(b, 0)
    a = llmc.Runtime(llmc.compile(model, tmp_path / "c", schedule=schedule))
    d = llmc.Runtime(llmc.compile(model, tmp_path / "d", schedule=canonical))
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    np.testing.assert_array_equal(a.logits(ids), d.logits(ids))


def test_cache_errors(llmc, loops_module):
    before = str(loops_module)
    sch = llmc.Schedule(loops_module)
    b = sch.get_block("sum")
    fails(llmc, lambda: sch.cache_read(b, 5), "has 2 reads, no read 5")
    fails(llmc, lambda: sch.cache_read(b, 1), "also writes the buffer of read 1")
    fails(llmc, lambda: sch.cache_write(b, 3), "has 1 writes, no write 3")
    fails(llmc, lambda: sch.cache_write(b, 0), "reads the buffer it writes without an init")
    assert str(loops_module) == before
    shared = llmc.parse("""
func.func @f(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "a" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%y[%v] : memref<8xf32>) {
      %t = affine.load %x[%v] : memref<8xf32>
      affine.store %t, %y[%v] : memref<8xf32>
    }
    tl.block "b" (%v = spatial %i) reads(%y[%v] : memref<8xf32>) writes(%x[%v] : memref<8xf32>) {
      %t = affine.load %y[%v] : memref<8xf32>
      affine.store %t, %x[%v] : memref<8xf32>
    }
  }
  return
}""")
    s2 = llmc.Schedule(shared)
    fails(llmc, lambda: s2.cache_read(s2.get_block("a"), 0), "is written inside the loop nest")
    fails(llmc, lambda: s2.cache_write(s2.get_block("a"), 0), "another block in the loop nest")


# ---- compute_at ----------------------------------------------------------------

PRODUCER_CONSUMER = """
func.func @f(%x: tensor<?x16xf32>, %w: tensor<8x16xf32>) -> tensor<?x8xf32> {
  %h = graph.silu %x : tensor<?x16xf32>
  %y = graph.matmul %h, %w : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
"""


def test_compute_at_row(llmc):
    m = llmc.parse(PRODUCER_CONSUMER)
    llmc.PassManager("tl", schedule="none").run(m)
    sch = llmc.Schedule(m)
    s, n, k = sch.get_loops(sch.get_block("matmul"))
    silu = sch.compute_at(sch.get_block("silu"), s)
    m.verify()
    loops = sch.get_loops(silu)
    # Under the row loop of the matmul: one loop over the 16 needed columns
    # (rows: a range of one).
    assert len(loops) == 3
    assert 'tl.block "silu"' in str(s)
    assert "compute_at(b1, l0)" in str(sch.trace)


def test_compute_at_in_a_model(llmc, tiny_model, tmp_path):
    model = llmc.import_model(tiny_model)

    def schedule(sch):
        # The MLP's silu·mul (one nest, graph-fuse-elementwise) row by row
        # under its one reader, the down projection.
        for f in PHASES:
            for producer, consumer in (("silu_mul", "matmul_6"), ("silu_mul_1", "matmul_13")):
                row = sch.get_loops(sch.get_block(consumer, f))[0]
                sch.compute_at(sch.get_block(producer, f), row)

    a = llmc.Runtime(llmc.compile(model, tmp_path / "c", schedule=schedule))
    d = llmc.Runtime(llmc.compile(model, tmp_path / "d", schedule=canonical))
    ids = [7, 7, 1, 2, 250, 31]
    np.testing.assert_array_equal(a.logits(ids), d.logits(ids))


def test_compute_at_errors(llmc, loops_module):
    m = llmc.parse(PRODUCER_CONSUMER)
    llmc.PassManager("tl", schedule="none").run(m)
    sch = llmc.Schedule(m)
    silu = sch.get_block("silu")
    mm = sch.get_block("matmul")
    s, n, k = sch.get_loops(mm)
    si, sj = sch.get_loops(silu)
    before = str(m)
    fails(llmc, lambda: sch.compute_at(mm, si), "follows the block's own nest")
    fails(llmc, lambda: sch.compute_at(silu, sj), "inside the block's own loop nest")
    assert str(m) == before
    # A second reader outside the loop.
    two = llmc.parse("""
func.func @f(%x: tensor<?x16xf32>, %w: tensor<8x16xf32>) -> (tensor<?x8xf32>, tensor<?x16xf32>) {
  %h = graph.silu %x : tensor<?x16xf32>
  %y = graph.matmul %h, %w : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
  %z = graph.mul %h, %h : tensor<?x16xf32>, tensor<?x16xf32>
  return %y, %z : tensor<?x8xf32>, tensor<?x16xf32>
}""")
    llmc.PassManager("tl", schedule="none").run(two)
    s2 = llmc.Schedule(two)
    l = s2.get_loops(s2.get_block("matmul"))[0]
    fails(llmc, lambda: s2.compute_at(s2.get_block("silu"), l), "also read outside the loop")
    sch3 = llmc.Schedule(loops_module)
    same = sch3.get_loops(sch3.get_block("same"))[0]
    fails(llmc, lambda: sch3.compute_at(sch3.get_block("tri"), same),
          "loops must start at 0 with step 1")
    fails(llmc, lambda: sch3.compute_at(sch3.get_block("sum"), same),
          "no block under the loop reads the output")


# ---- more preconditions, on a real model's loop nests ---------------------------

@pytest.fixture
def model_tl(llmc, tiny_model):
    m = llmc.import_model(tiny_model)
    llmc.PassManager("tl", schedule="none").run(m)
    return m


def test_model_preconditions(llmc, model_tl):
    before = str(model_tl)
    sch = llmc.Schedule(model_tl)
    P = "forward_prefill"
    # The embedding loads the token id between its loops.
    s, j = sch.get_loops(sch.get_block("embedding", P))
    fails(llmc, lambda: sch.reorder([j, s]), "not perfectly nested")
    fails(llmc, lambda: sch.compute_at(sch.get_block("embedding", P),
                                       sch.get_loops(sch.get_block("rms_norm_sumsq", P))[0]),
          "iteration variable 1 is not bound to a loop")
    # Attention: a query tile's loop and a KV head's hold the rows' init and
    # normalization besides the loop over the tiles of positions (flash
    # attention, the exact mode), which holds the rows' softmax and p.V
    # besides q.k (each over the tile's rows r, then the group's heads g).
    s, kv, tile, r, g, t, d = sch.get_loops(sch.get_block("attention_scores", P))
    fails(llmc, lambda: sch.fuse([kv, tile]), "not perfectly nested")
    fails(llmc, lambda: sch.fuse([tile, r]), "not perfectly nested")
    # RoPE writes its output twice (the two halves of a pair).
    fails(llmc, lambda: sch.compute_at(sch.get_block("rope", P), s), "exactly one buffer")
    # The key/value store binds a variable to pos0 + s, not to a loop.
    fails(llmc, lambda: sch.compute_at(sch.get_block("kv_store", P), s),
          "iteration variable 1 is not bound to a loop")
    assert str(model_tl) == before
    # RoPE stores two elements per instance: not one write region.
    fails(llmc, lambda: sch.compute_inline(sch.get_block("rope", P)), "2 write regions")
    assert str(model_tl) == before
    # Legal ones: the sum of squares per row, computed inside the scaling's
    # row loop; a layer's scaling computed where the matmul loads it.
    r = sch.get_loops(sch.get_block("rms_norm_scale", P))[0]
    moved = sch.compute_at(sch.get_block("rms_norm_sumsq", P), r)
    model_tl.verify()
    assert len(sch.get_loops(moved)) == 3
    # (now not alone in its nest)
    fails(llmc, lambda: sch.compute_inline(sch.get_block("rms_norm_scale", P)),
          "the only block of its loop nest")
    sch.compute_inline(sch.get_block("rms_norm_scale_1", P))
    model_tl.verify()
    fails(llmc, lambda: sch.get_block("rms_norm_scale_1", P))


NONLINEAR = """
func.func @f(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %i = %c0 to %c16 step %c1 {
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<16xf32>) writes(%y[%v] : memref<16xf32>) {
      %t = affine.load %x[%v] : memref<16xf32>
      affine.store %t, %y[%v] : memref<16xf32>
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    tl.block "c" (%v = spatial %o) reads(%y[%v floordiv 2] : memref<16xf32>) writes(%z[%v] : memref<32xf32>) {
      %t = affine.load %y[%v floordiv 2] : memref<16xf32>
      affine.store %t, %z[%v] : memref<32xf32>
    }
  }
  tl.for %o = %c0 to %c16 step %c1 {
    tl.block "r" (%v = spatial %o, %w = reduce %o) reads() writes(%x[%w] : memref<16xf32>) init {
      %zero = arith.constant 0.0 : f32
      affine.store %zero, %x[%w] : memref<16xf32>
    } {
      %one = arith.constant 1.0 : f32
      affine.store %one, %x[%w] : memref<16xf32>
    }
  }
  return
}
"""


def test_nonlinear_and_reduction_writes(llmc):
    m = llmc.parse(NONLINEAR)
    sch = llmc.Schedule(m)
    o = sch.get_loops(sch.get_block("c"))[0]
    # The consumer reads y[o floordiv 2]: linear in no loop under o, so at o
    # itself (a single iteration) it is fine, but a loop over o inside would
    # not be. Split o to get one.
    oo, oi = sch.split(o, [-1, 4])
    split = str(m)
    fails(llmc, lambda: sch.compute_at(sch.get_block("p"), oo), "is not linear in the loops")
    assert str(m) == split
    r = sch.get_block("r")
    fails(llmc, lambda: sch.decompose_reduction(r, sch.get_loops(r)[0]),
          "is bound inside the loop")
    fails(llmc, lambda: sch.compute_at(r, oi), "follows the block's own nest")


COMPUTE_AT_CASES = """
func.func @f(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>, %q: memref<16x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c3 = arith.constant 3 : index
  tl.block "top" () reads() writes(%y[0] : memref<16xf32>) {
    %one = arith.constant 1.0 : f32
    affine.store %one, %y[0] : memref<16xf32>
  }
  tl.for %i = %c0 to %c16 step %c1 {
    tl.block "pair1" (%v = spatial %i) reads() writes(%y[%v] : memref<16xf32>) {
      %one = arith.constant 1.0 : f32
      affine.store %one, %y[%v] : memref<16xf32>
    }
    tl.block "pair2" (%v = spatial %i) reads() writes(%z[%v] : memref<16xf32>) {
      %one = arith.constant 1.0 : f32
      affine.store %one, %z[%v] : memref<16xf32>
    }
  }
  tl.for %i = %c0 to %c16 step %c1 {
    %m = arith.muli %i, %c1 : index
    tl.for %j = %c0 to %m step %c1 {
      tl.block "inner_bound" (%v = spatial %i, %w = spatial %j) reads() writes(%q[%v, %w] : memref<16x16xf32>) {
        %one = arith.constant 1.0 : f32
        affine.store %one, %q[%v, %w] : memref<16x16xf32>
      }
    }
  }
  tl.for %i = %c0 to %c16 step %c1 {
    %m = arith.addi %c4, %c4 : index
    tl.for %j = %c0 to %m step %c1 {
      tl.block "inner_const" (%v = spatial %i, %w = spatial %j) reads() writes(%q[%v, %w] : memref<16x16xf32>) {
        %one = arith.constant 1.0 : f32
        affine.store %one, %q[%v, %w] : memref<16x16xf32>
      }
    }
  }
  tl.for %i = %c0 to %c16 step %c1 {
    tl.for %j = %c0 to %c16 step %c1 {
      tl.block "diag" (%v = spatial %i, %w = spatial %j) reads() writes(%q[%v, %v] : memref<16x16xf32>) {
        %one = arith.constant 1.0 : f32
        affine.store %one, %q[%v, %v] : memref<16x16xf32>
      }
    }
  }
  tl.for %i = %c0 to %c16 step %c1 {
    tl.for %j = %c0 to %c4 step %c1 {
      tl.block "partial" (%v = spatial %i, %w = spatial %j) reads() writes(%z[%v] : memref<16xf32>) {
        %one = arith.constant 1.0 : f32
        affine.store %one, %z[%v] : memref<16xf32>
      }
    }
  }
  tl.for %i = %c0 to %c16 step %c1 {
    %h = arith.constant 0.5 : f32
    tl.for %j = %c0 to %c4 step %c1 {
      tl.block "uses_inside" (%v = spatial %i, %w = spatial %j) reads() writes(%q[%v, %w] : memref<16x16xf32>) {
        affine.store %h, %q[%v, %w] : memref<16x16xf32>
      }
    }
  }
  tl.for %i = %c0 to %c16 step %c1 {
    tl.block "prod" (%v = spatial %i) reads() writes(%x[%v] : memref<16xf32>) {
      %one = arith.constant 1.0 : f32
      affine.store %one, %x[%v] : memref<16xf32>
    }
  }
  tl.for %o = %c0 to %n step %c1 {
    %sq = arith.muli %o, %o : index
    tl.for %t = %c0 to %c4 step %c1 {
      tl.block "nonaffine" (%v = spatial %sq) reads(%x[%v] : memref<16xf32>) writes(%y[%v] : memref<16xf32>) {
        %a = affine.load %x[%v] : memref<16xf32>
        affine.store %a, %y[%v] : memref<16xf32>
      }
    }
    tl.for %t = %c1 to %c4 step %c1 {
      tl.block "offset" (%v = spatial %t) reads(%x[%v] : memref<16xf32>) writes(%z[%v] : memref<16xf32>) {
        %a = affine.load %x[%v] : memref<16xf32>
        affine.store %a, %z[%v] : memref<16xf32>
      }
    }
    %e = arith.addi %o, %c3 : index
    tl.for %t = %c0 to %e step %c1 {
      tl.block "varying" (%v = spatial %t) reads(%x[%v] : memref<16xf32>) writes(%z[%v] : memref<16xf32>) {
        %a = affine.load %x[%v] : memref<16xf32>
        affine.store %a, %z[%v] : memref<16xf32>
      }
    }
  }
  return
}
"""


def test_compute_at_preconditions(llmc):
    m = llmc.parse(COMPUTE_AT_CASES)
    before = str(m)
    sch = llmc.Schedule(m)
    last = sch.get_loops(sch.get_block("varying"))[0]
    fails(llmc, lambda: sch.compute_at(sch.get_block("top"), last), "has no loop nest")
    fails(llmc, lambda: sch.compute_at(sch.get_block("pair1"), last),
          "must be the only block of its loop nest")
    fails(llmc, lambda: sch.compute_at(sch.get_block("inner_bound"), last),
          "loop bounds depend on each other")
    fails(llmc, lambda: sch.compute_at(sch.get_block("inner_const"), last),
          "loop bounds are computed inside its nest")
    fails(llmc, lambda: sch.compute_at(sch.get_block("diag"), last),
          "one spatial variable per dimension")
    fails(llmc, lambda: sch.compute_at(sch.get_block("partial"), last),
          "spatial variable 1 does not index the output")
    fails(llmc, lambda: sch.compute_at(sch.get_block("uses_inside"), last),
          "uses values computed inside its loop nest")
    # The producer "prod" is read under the last loop nest by three blocks:
    # through a non-affine index, under a loop that does not start at 0, and
    # under a loop whose extent changes with the target loop.
    fails(llmc, lambda: sch.compute_at(sch.get_block("prod"), last),
          "consumer tl.block 'nonaffine' is not affine")
    assert str(m) == before

    def without(text, name):
        # Drops the loop around block `name` (a 5-line tl.for) from the IR.
        lines = text.splitlines()
        at = next(i for i, l in enumerate(lines) if '"%s"' % name in l) - 1
        return "\n".join(lines[:at] + lines[at + 6:])
    no_nonaffine = without(COMPUTE_AT_CASES, "nonaffine")
    m2 = llmc.parse(no_nonaffine)
    s2 = llmc.Schedule(m2)
    fails(llmc, lambda: s2.compute_at(s2.get_block("prod"),
                                      s2.get_loops(s2.get_block("varying"))[0]),
          "must start at 0 with step 1")
    m3 = llmc.parse(without(no_nonaffine, "offset"))
    s3 = llmc.Schedule(m3)
    before3 = str(m3)
    fails(llmc, lambda: s3.compute_at(s3.get_block("prod"),
                                      s3.get_loops(s3.get_block("varying"))[0]),
          "extent of a loop under the target loop varies within it")
    assert str(m3) == before3


def test_rfactor_tree_and_peel_in_a_model(llmc, tiny_model, tmp_path):
    """Every matmul's reduction split into 16 lanes (the remainder of the
    reduction peeled off), factored into per-lane partials and summed in a
    tree: the same logits as the default within the rounding of a reordered
    sum, and the trace replays to the same IR."""
    m = llmc.import_model(tiny_model)
    traces = []

    def schedule(sch):
        for f in PHASES:
            for b in numbered(sch, "matmul", f):
                k = reduction_innermost(sch, b)[-1]
                (ko, ki), tail = sch.split(k, [-1, 16], peel=True)
                rf, wb, init = sch.rfactor(b, ki)
                sch.tree_reduce(wb)
        traces.append(sch.trace)

    scheduled = llmc.compile(m, tmp_path / "sched", schedule=schedule)
    default = llmc.compile(m, tmp_path / "default", schedule=canonical)
    text = str(traces[0])
    # (The q projection's rows interleaved, the exact mode's layout: a
    # group of 64 rows, its loop folded, (tokens, k, rows) reordered to
    # (tokens, rows, k).)
    assert "l3, l4 = sch.reorder([l2, l1])" in text, text
    assert "(l5, l6,), _ = sch.split(l4, [-1, 16], True)" in text, text
    assert "b1, b2, b3 = sch.rfactor(b0, [l6])" in text, text
    assert "sch.tree_reduce(b2)" in text, text
    ids = [(i * 7 + 3) % 300 for i in range(24)]
    a = llmc.Runtime(scheduled).logits(ids)
    b = llmc.Runtime(default).logits(ids)
    assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max()
    assert not np.array_equal(a, b)   # the sums were reordered
    # Replaying the trace on a fresh tl module gives the same IR.
    def tl_module():
        t = llmc.import_model(tiny_model)
        llmc.PassManager("tl", schedule="none").run(t)
        return t
    first, second = tl_module(), tl_module()
    schedule(llmc.Schedule(first))
    traces[-1].apply(second)
    assert str(first) == str(second)


def test_rfactor_from_a_root(llmc):
    """rfactor(root=...): the reduction blocked by 16 with its blocks
    outermost; from the inner loop on, one accumulator per output, added
    to the output after each block (its 0 stored in the first); the trace
    records the root. A root that is no loop of the reduction is an error,
    the IR unchanged."""
    m = tl_matmul(llmc)
    sch = llmc.Schedule(m)
    b = sch.get_block("matmul")
    s, n, k = sch.get_loops(b)
    before = str(m)
    fails(llmc, lambda: sch.rfactor(b, [], root=n),
          "the root loop must enclose tl.block 'matmul' and bind a reduction variable")
    assert str(m) == before
    kb, ki = sch.split(k, [-1, 16])
    kb, s, n = sch.reorder([kb, s, n])
    rf, wb, init = sch.rfactor(b, [], root=ki)
    m.verify()
    text = str(m)
    # The write-back binds the blocks' offset as its reduction variable
    # (its init runs in the first block) and adds the partial.
    header = str(wb).split(") reads(")[0]
    assert header.count("= reduce ") == 1 and "init {" in str(wb), str(wb)
    assert "arith.addf" in str(wb)
    assert text.index('"matmul_rf"') < text.index('"matmul" (')
    assert "sch.rfactor(b0, [], l4)" in str(sch.trace), str(sch.trace)
    # The trace replays to the same IR.
    again = tl_matmul(llmc)
    sch.trace.apply(again)
    assert str(again) == text


def test_rfactor_and_tree_errors(llmc, loops_module):
    sch = llmc.Schedule(loops_module)
    before = str(loops_module)
    s, k = sch.get_loops(sch.get_block("sum"))
    fails(llmc, lambda: sch.rfactor(sch.get_block("sum"), s),
          "a lane loop encloses the reduction's outermost loop")
    fails(llmc, lambda: sch.tree_reduce(sch.get_block("sum")),
          "the combined value must be read from a stack buffer of partials")
    with pytest.raises(ValueError, match="the first factor is inferred"):
        sch.split(k, [4, 4], peel=True)
    assert str(loops_module) == before


def vectorized_matmul_schedule(sch, lanes=16):
    """Every matmul: the reduction in `lanes` lanes (its remainder peeled
    off), the partials as a vector, summed in a vectorized tree."""
    import llmc
    for f in PHASES:
        for n, b in enumerate(list(numbered(sch, "matmul", f))):
            name = "matmul" if n == 0 else "matmul_%d" % n
            k = reduction_innermost(sch, b)[-1]
            (ko, ki), tail = sch.split(k, [-1, lanes], peel=True)
            rf, wb, init = sch.rfactor(b, ki)
            sch.vectorize(sch.get_loops(rf)[-1])
            sch.vectorize(sch.get_loops(init)[-1])
            final = sch.tree_reduce(wb)
            level = 0
            while True:
                try:
                    t = sch.get_block("%s_tree%d" % (name, level), f)
                except llmc.Error:
                    break
                loops = sch.get_loops(t)
                if len(loops) > len(sch.get_loops(final)):
                    sch.vectorize(loops[-1])
                level += 1


def test_vectorized_model_matches_default(llmc, tiny_model, tmp_path):
    """Vectorized lanes reach the machine code and compute the same model
    (within the rounding of the reordered sums)."""
    m = llmc.import_model(tiny_model)
    scheduled = llmc.compile(m, tmp_path / "vec", schedule=vectorized_matmul_schedule)
    default = llmc.compile(m, tmp_path / "default")
    ids = [(i * 7 + 3) % 300 for i in range(24)]
    a = llmc.Runtime(scheduled).logits(ids)
    b = llmc.Runtime(default).logits(ids)
    assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max()
    # The lowered IR holds vector loads and arithmetic on vectors.
    t = llmc.import_model(tiny_model)
    llmc.PassManager("tl", schedule="none").run(t)
    vectorized_matmul_schedule(llmc.Schedule(t))
    llmc.PassManager("llmc-llvm").run(t)
    text = str(t)
    assert "llvm.load" in text and "vector<16xf32>" in text
    assert "llvm.fmul" in text and "vector<16xf32>" in text


# ---- reverse_compute_inline ------------------------------------------------------

EPILOGUE = """
func.func @f(%x: memref<8xf32>, %r: memref<8xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %b = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "square" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      %s = arith.mulf %a, %a : f32
      affine.store %s, %b[symbol(%v)] : memref<8xf32>
    }
  }
  %out = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "add" (%v = spatial %i) reads(%r[%v] : memref<8xf32>, %b[%v] : memref<8xf32>) writes(%out[%v] : memref<8xf32>) {
      %a = affine.load %r[symbol(%v)] : memref<8xf32>
      %p = affine.load %b[symbol(%v)] : memref<8xf32>
      %s = arith.addf %a, %p : f32
      affine.store %s, %out[symbol(%v)] : memref<8xf32>
    }
  }
  return %out : memref<8xf32>
}
"""


def test_reverse_compute_inline(llmc, tiny_model, tmp_path):
    m = llmc.parse(EPILOGUE)
    sch = llmc.Schedule(m)
    sch.reverse_compute_inline(sch.get_block("add"))
    m.verify()
    text = str(m)
    assert 'tl.block "add"' not in text and text.count("memref.alloc") == 1
    assert "arith.addf" in text.split('tl.block "square"')[1]
    assert "reverse_compute_inline(b0)" in str(sch.trace)
    # A producer that is a reduction (an f32 matmul) cannot take it; the IR
    # is left as it was.
    model = llmc.import_model(tiny_model)

    def schedule(sch):
        before = str(sch.module)
        fails(llmc, lambda: sch.reverse_compute_inline(sch.get_block("add", PHASES[0])),
              "reverse_compute_inline", "has reduction variables")
        assert str(sch.module) == before
    llmc.compile(model, tmp_path / "r", schedule=schedule)


SIBLINGS = """
func.func @heads(%x: memref<4x8xf32>, %s: memref<4x8xf32>, %y: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %h = %c0 to %c4 step %c1 {
    tl.for %t = %c0 to %c8 step %c1 {
      tl.block "a" (%vh = spatial %h, %vt = spatial %t) reads(%x[%vh, %vt] : memref<4x8xf32>)
          writes(%s[%vh, %vt] : memref<4x8xf32>) {
        %v = affine.load %x[%vh, %vt] : memref<4x8xf32>
        affine.store %v, %s[%vh, %vt] : memref<4x8xf32>
      }
    }
  }
  tl.for %h = %c0 to %c4 step %c1 {
    tl.for %t = %c0 to %c8 step %c1 {
      tl.block "b" (%vh = spatial %h, %vt = spatial %t) reads(%s[%vh, %vt] : memref<4x8xf32>)
          writes(%y[%vh, %vt] : memref<4x8xf32>) {
        %v = affine.load %s[%vh, %vt] : memref<4x8xf32>
        affine.store %v, %y[%vh, %vt] : memref<4x8xf32>
      }
    }
  }
  return
}
"""


def test_fuse_siblings(llmc):
    m = llmc.parse(SIBLINGS)
    sch = llmc.Schedule(m)
    ha, _ = sch.get_loops(sch.get_block("a"))
    hb, _ = sch.get_loops(sch.get_block("b"))
    h = sch.fuse_siblings([ha, hb])
    m.verify()
    assert str(m).count("to %c4 step") == 1
    assert [str(l).splitlines()[0] for l in sch.get_loops(sch.get_block("b"))][0] == \
        str(h).splitlines()[0]
    assert "sch.fuse_siblings([" in sch.trace.as_python()


def test_fuse_siblings_one_loop(llmc):
    # One loop is its own fusion: nothing changes (it once walked past the
    # end of its block looking for the last loop).
    m = llmc.parse(SIBLINGS)
    before = str(m)
    sch = llmc.Schedule(m)
    ha, _ = sch.get_loops(sch.get_block("a"))
    h = sch.fuse_siblings([ha])
    m.verify()
    assert str(m) == before
    assert str(h).splitlines()[0] == str(ha).splitlines()[0]


def test_fuse_siblings_errors(llmc, loops_module):
    before = str(loops_module)
    sch = llmc.Schedule(loops_module)
    i, k = sch.get_loops(sch.get_block("sum"))
    t, u = sch.get_loops(sch.get_block("tri"))
    fails(llmc, lambda: sch.fuse_siblings([i, t]), "bounds, step or kind differ")
    fails(llmc, lambda: sch.fuse_siblings([t, i]), "must be siblings, in order")
    assert str(loops_module) == before


LAUNCHES = """
func.func @launches(%x: memref<8xf32>, %y: memref<32xf32>, %z: memref<16xf32>, %u: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "a" (%vb = spatial %b, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vb * 8 + %vt] : memref<32xf32>) {
        %v = affine.load %x[symbol(%vt)] : memref<8xf32>
        affine.store %v, %y[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
      }
    }
  }
  tl.for %b = %c0 to %c2 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "b" (%vb = spatial %b, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%z[%vb * 8 + %vt] : memref<16xf32>) {
        %v = affine.load %x[symbol(%vt)] : memref<8xf32>
        affine.store %v, %z[symbol(%vb) * 8 + symbol(%vt)] : memref<16xf32>
      }
    }
  }
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "c" (%vb = spatial %b, %vt = spatial %t) reads(%y[%vb * 8 + %vt] : memref<32xf32>) writes(%u[%vb * 8 + %vt] : memref<32xf32>) {
        %v = affine.load %y[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
        affine.store %v, %u[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
      }
    }
  }
  return
}
"""


def test_fuse_launches(llmc):
    # Two independent launches (4 and 2 workgroups) become one of 6; the
    # third reads what the first writes and stays apart.
    m = llmc.parse(LAUNCHES)
    sch = llmc.Schedule(m)
    tops = [sch.get_loops(sch.get_block(n))[0] for n in ("a", "b", "c")]
    fails(llmc, lambda: sch.fuse_launches(tops), "accesses a buffer that another of the launches writes")
    block_b = sch.get_block("b")
    fused = sch.fuse_launches(tops[:2])
    m.verify()
    # The blocks inside keep their handles (moved into the fused launch).
    assert str(block_b).startswith('tl.block "b"')
    assert sch.get_loops(block_b)[0].handle is not None
    text = str(m)
    assert text.count('thread("blockIdx.x")') == 2
    assert "arith.constant 6 : index" in str(m)
    assert str(sch.get_loops(sch.get_block("b"))[0]).splitlines()[0] == str(fused).splitlines()[0]
    assert "sch.fuse_launches([" in sch.trace.as_python()
    # The trace replays to the same IR (the refused call is not in it).
    again = llmc.parse(LAUNCHES)
    sch.trace.apply(again)
    assert str(again) == text
    fails(llmc, lambda: sch.fuse_launches([fused]), "needs two launches or more")


def test_distribute(llmc):
    # fuse_siblings and distribute undo each other: the fused heads loop
    # splits back into one loop per nest, each with its block.
    m = llmc.parse(SIBLINGS)
    sch = llmc.Schedule(m)
    ha, _ = sch.get_loops(sch.get_block("a"))
    hb, _ = sch.get_loops(sch.get_block("b"))
    sch.fuse_siblings([ha, hb])
    first, second = sch.distribute(sch.get_loops(sch.get_block("a"))[0])
    m.verify()
    assert str(m).count("to %c4 step") == 2
    assert '"a"' in str(first) and '"b"' not in str(first)
    assert '"b"' in str(second) and '"a"' not in str(second)
    assert "sch.distribute(" in sch.trace.as_python()
    # One nest left in the loop: nothing to distribute.
    fails(llmc, lambda: sch.distribute(first), "not two or more")


TILE = """
func.func @tile(%x: memref<8x4xf32>, %o: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  tl.for %t0 = %c0 to %c2 step %c1 {
    tl.for %t1 = %c0 to %c4 step %c1 {
      %b = arith.muli %t0, %c4 : index
      %t = arith.addi %b, %t1 : index
      %acc = memref.alloca() {alignment = 64 : i64} : memref<1xf32>
      tl.for %k = %c0 to %c4 step %c1 {
        tl.block "sum" (%v = spatial %t, %vk = reduce %k) reads(%x[%v, %vk] : memref<8x4xf32>, %acc[0] : memref<1xf32>) writes(%acc[0] : memref<1xf32>) init {
          %z = arith.constant 0.0 : f32
          affine.store %z, %acc[0] : memref<1xf32>
        } {
          %a = affine.load %x[symbol(%v), symbol(%vk)] : memref<8x4xf32>
          %s = affine.load %acc[0] : memref<1xf32>
          %n = arith.addf %a, %s : f32
          affine.store %n, %acc[0] : memref<1xf32>
        }
      }
      tl.block "out" (%v = spatial %t) reads(%acc[0] : memref<1xf32>) writes(%o[%v] : memref<8xf32>) {
        %a = affine.load %acc[0] : memref<1xf32>
        affine.store %a, %o[symbol(%v)] : memref<8xf32>
      }
    }
  }
  return
}
"""


def test_expand_then_distribute(llmc):
    m = llmc.parse(TILE)
    sch = llmc.Schedule(m)
    t0, t1, k = sch.get_loops(sch.get_block("sum"))
    # Shared by the two parts: not yet.
    fails(llmc, lambda: sch.distribute(t1), "used by more than one part")
    sch.expand(sch.get_block("sum"), 0, t1)
    m.verify()
    assert "memref<4x1xf32>" in str(m)
    sums, outs = sch.distribute(t1)
    m.verify()
    assert '"sum"' in str(sums) and '"out"' in str(outs)
    assert "sch.expand(" in sch.trace.as_python()
    fails(llmc, lambda: sch.expand(sch.get_block("out"), 0, t0), "stack buffer")


NIBBLES = """
func.func @nibbles(%a: memref<?x32xi8>, %w: memref<4x16xi8>, %y: memref<?x4xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c15 = arith.constant 15 : i8
  %zero = arith.constant 0 : i32
  tl.for %g = %c0 to %c4 step %c1 kind(parallel) {
    tl.for %t = %c0 to %n step %c1 {
      tl.for %h = %c0 to %c2 step %c1 {
        tl.for %j = %c0 to %c16 step %c1 kind(vectorized) {
          tl.block "dot" (%vt = spatial %t, %vg = spatial %g, %vh = reduce %h, %vj = reduce %j) reads(%a[%vt, %vh * 16 + %vj] : memref<?x32xi8>, %w[%vg, %vj] : memref<4x16xi8>, %y[%vt, %vg] : memref<?x4xi32>) writes(%y[%vt, %vg] : memref<?x4xi32>) init {
            affine.store %zero, %y[symbol(%vt), symbol(%vg)] : memref<?x4xi32>
          } {
            %x = affine.load %a[symbol(%vt), symbol(%vh) * 16 + symbol(%vj)] : memref<?x32xi8>
            %b = affine.load %w[symbol(%vg), symbol(%vj)] : memref<4x16xi8>
            %s4 = arith.muli %vh, %c4 : index
            %s = arith.index_castui %s4 : index to i8
            %sh = arith.shrui %b, %s : i8
            %q = arith.andi %sh, %c15 : i8
            %xw = arith.extsi %x : i8 to i32
            %qw = arith.extui %q : i8 to i32
            %p = arith.muli %xw, %qw : i32
            %acc = affine.load %y[symbol(%vt), symbol(%vg)] : memref<?x4xi32>
            %r = arith.addi %acc, %p : i32
            affine.store %r, %y[symbol(%vt), symbol(%vg)] : memref<?x4xi32>
          }
        }
      }
    }
  }
  return
}
"""


def test_hoist_unpacking_out_of_the_tokens(llmc):
    """A weight's nibbles unpacked once per row group (loop 0), not per token."""
    m = llmc.parse(NIBBLES)
    sch = llmc.Schedule(m)
    dot = sch.get_block("dot")
    g, t, h, j = sch.get_loops(dot)
    # The activation (widening 0) moves with the tokens: it stays.
    fails(llmc, lambda: sch.hoist(dot, 0, g), "run from 0 by 1 to a constant")
    fails(llmc, lambda: sch.hoist(dot, 2, g), "no widening 2")
    hoisted = sch.hoist(dot, 1, g)
    m.verify()
    assert '"dot_hoist"' in str(hoisted)
    assert "memref<32xi8>" in str(m)
    assert "sch.hoist(" in sch.trace.as_python()
