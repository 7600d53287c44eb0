"""Self-checks of the GGUF test tooling; needs no llmc binary.

gguf_io (GGUF v2/v3 container, metadata of every value type, alignment, the
F32/F16/BF16/Q8_0/Q4_0/Q4_K/Q6_K block formats checked against a scalar
transcription of ggml-quants.c), make_gguf_model (determinism, llama.cpp
metadata keys, tensor names and types, the llama q/k permutation) and
gguf_torch_ref (an F32 GGUF gives exactly hf_torch_ref's logits on the same
weights written as an HF checkpoint)."""
import math
import struct
import subprocess
import sys

import numpy as np
import pytest
import torch

import e2e_util
import gguf_io as G
import gguf_torch_ref
import hf_torch_ref
import make_gguf_model as M
import safetensors_io

torch.set_num_threads(1)
F = np.float32
PROMPT = e2e_util.deterministic_prompt_ids(24, 512)


# ---- scalar transcriptions of ggml-quants.c (float32 one operation at a time) ---------


def h2f(b, off):
    return F(np.frombuffer(bytes(b[off:off + 2]), "<f2")[0])


def f2h(v):
    return np.array([v], F).astype("<f2").tobytes()


def nearest_int(v):
    return int(np.rint(F(v)))


# dequantize_row_*
def dq_q4_0(b):
    y = []
    for i in range(0, len(b), 18):
        d = h2f(b, i); qs = b[i + 2:i + 18]
        lo = [F(F((q & 0xF) - 8) * d) for q in qs]
        hi = [F(F((q >> 4) - 8) * d) for q in qs]
        y += lo + hi
    return np.array(y, F)


def dq_q8_0(b):
    y = []
    for i in range(0, len(b), 34):
        d = h2f(b, i)
        y += [F(F(q) * d) for q in np.frombuffer(bytes(b[i + 2:i + 34]), np.int8)]
    return np.array(y, F)


def scale_min_k4(j, q):
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)


def dq_q4_k(b):
    y = []
    for i in range(0, len(b), 144):
        d, mn = h2f(b, i), h2f(b, i + 2)
        sc = b[i + 4:i + 16]; q = b[i + 16:i + 144]
        is_ = 0
        for j in range(0, 256, 64):
            s, m = scale_min_k4(is_, sc); d1 = F(d * F(s)); m1 = F(mn * F(m))
            s, m = scale_min_k4(is_ + 1, sc); d2 = F(d * F(s)); m2 = F(mn * F(m))
            qq = q[j // 2:j // 2 + 32]
            y += [F(F(d1 * F(v & 0xF)) - m1) for v in qq]
            y += [F(F(d2 * F(v >> 4)) - m2) for v in qq]
            is_ += 2
    return np.array(y, F)


def dq_q6_k(b):
    y = []
    for i in range(0, len(b), 210):
        ql = b[i:i + 128]; qh = b[i + 128:i + 192]
        sc = np.frombuffer(bytes(b[i + 192:i + 208]), np.int8); d = h2f(b, i + 208)
        for n in range(2):
            out = [None] * 128
            L, H, S = ql[64 * n:], qh[32 * n:], sc[8 * n:]
            for l in range(32):
                is_ = l // 16
                q1 = ((L[l] & 0xF) | (((H[l] >> 0) & 3) << 4)) - 32
                q2 = ((L[l + 32] & 0xF) | (((H[l] >> 2) & 3) << 4)) - 32
                q3 = ((L[l] >> 4) | (((H[l] >> 4) & 3) << 4)) - 32
                q4 = ((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4)) - 32
                out[l] = F(F(d * F(S[is_])) * F(q1))
                out[l + 32] = F(F(d * F(S[is_ + 2])) * F(q2))
                out[l + 64] = F(F(d * F(S[is_ + 4])) * F(q3))
                out[l + 96] = F(F(d * F(S[is_ + 6])) * F(q4))
            y += out
    return np.array(y, F)


# quantize_row_*_ref
def q_q4_0(x):
    out = b""
    for blk in np.asarray(x, F).reshape(-1, 32):
        amax = F(0); mx = F(0)
        for v in blk:
            if amax < abs(v):
                amax = abs(v); mx = v
        d = F(mx / F(-8)); idv = F(F(1) / d) if d else F(0)
        qs = bytearray(16)
        for j in range(16):
            x0 = F(blk[j] * idv); x1 = F(blk[16 + j] * idv)
            xi0 = min(15, int(F(x0 + F(8.5)))); xi1 = min(15, int(F(x1 + F(8.5))))
            qs[j] = xi0 | (xi1 << 4)
        out += f2h(d) + bytes(qs)
    return out


def q_q8_0(x):

    out = b""
    for blk in np.asarray(x, F).reshape(-1, 32):
        amax = F(0)
        for v in blk:
            amax = max(amax, abs(v))
        d = F(amax / F(127)); idv = F(F(1) / d) if d else F(0)
        qs = []
        for v in blk:
            x0 = float(F(v * idv))
            qs.append(int(math.copysign(math.floor(abs(x0) + 0.5), x0)))
        out += f2h(d) + np.array(qs, np.int8).tobytes()
    return out


def make_qkx2_quants(n, nmax, x, w, rmin, rdelta, nstep):
    mn = x[0]; mx = x[0]; sum_w = w[0]; sum_x = F(sum_w * x[0])
    for i in range(1, n):
        mn = min(mn, x[i]); mx = max(mx, x[i])
        sum_w = F(sum_w + w[i]); sum_x = F(sum_x + F(w[i] * x[i]))
    if mn > 0:
        mn = F(0)
    if mx == mn:
        return [0] * n, F(0), F(-mn)
    iscale = F(F(nmax) / F(mx - mn)); scale = F(F(1) / iscale)
    best = F(0); L = [0] * n
    for i in range(n):
        L[i] = max(0, min(nmax, nearest_int(F(iscale * F(x[i] - mn)))))
        diff = F(F(F(scale * F(L[i])) + mn) - x[i])
        best = F(best + F(w[i] * F(diff * diff)))
    for is_ in range(nstep + 1):
        iscale = F(F(F(F(rmin) + F(F(rdelta) * F(is_))) + F(nmax)) / F(mx - mn))
        sl = sl2 = sxl = F(0); La = [0] * n
        for i in range(n):
            l = max(0, min(nmax, nearest_int(F(iscale * F(x[i] - mn)))))
            La[i] = l
            sl = F(sl + F(w[i] * F(l))); sl2 = F(sl2 + F(F(w[i] * F(l)) * F(l)))
            sxl = F(sxl + F(F(w[i] * F(l)) * x[i]))
        D = F(F(sum_w * sl2) - F(sl * sl))
        if D > 0:
            ts = F(F(F(sum_w * sxl) - F(sum_x * sl)) / D)
            tm = F(F(F(sl2 * sum_x) - F(sl * sxl)) / D)
            if tm > 0:
                tm = F(0); ts = F(sxl / sl2)
            cur = F(0)
            for i in range(n):
                diff = F(F(F(ts * F(La[i])) + tm) - x[i])
                cur = F(cur + F(w[i] * F(diff * diff)))
            if cur < best:
                L = La; best = cur; scale = ts; mn = tm
    return L, scale, F(-mn)


def q_q4_k(x):
    out = b""
    for blk in np.asarray(x, F).reshape(-1, 256):
        L = [0] * 256; scales = [F(0)] * 8; mins = [F(0)] * 8
        max_scale = F(0); max_min = F(0)
        for j in range(8):
            sub = blk[32 * j:32 * j + 32]
            sx2 = F(0)
            for v in sub:
                sx2 = F(sx2 + F(v * v))
            av = F(np.sqrt(F(sx2 / F(32))))
            w = [F(av + abs(v)) for v in sub]
            Lj, scales[j], mins[j] = make_qkx2_quants(32, 15, sub, w, -1.0, 0.1, 20)
            L[32 * j:32 * j + 32] = Lj
            max_scale = max(max_scale, scales[j]); max_min = max(max_min, mins[j])
        inv_s = F(F(63) / max_scale) if max_scale > 0 else F(0)
        inv_m = F(F(63) / max_min) if max_min > 0 else F(0)
        s = [0] * 12
        for j in range(8):
            ls = min(63, nearest_int(F(inv_s * scales[j]))); lm = min(63, nearest_int(F(inv_m * mins[j])))
            if j < 4:
                s[j] = ls; s[j + 4] = lm
            else:
                s[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4)
                s[j - 4] |= (ls >> 4) << 6
                s[j] |= (lm >> 4) << 6
        dh = f2h(F(max_scale / F(63))); mh = f2h(F(max_min / F(63)))
        d16 = F(np.frombuffer(dh, "<f2")[0]); m16 = F(np.frombuffer(mh, "<f2")[0])
        for j in range(8):
            sc, m = scale_min_k4(j, s)
            d = F(d16 * F(sc))
            if not d:
                continue
            dm = F(m16 * F(m))
            for ii in range(32):
                L[32 * j + ii] = max(0, min(15, nearest_int(F(F(blk[32 * j + ii] + dm) / d))))
        q = bytearray(128)
        for j in range(0, 256, 64):
            for l in range(32):
                q[j // 2 + l] = L[j + l] | (L[j + l + 32] << 4)
        out += dh + mh + bytes(s) + bytes(q)
    return out


def make_qx_quants(n, nmax, x):
    mx = F(0); amax = F(0)
    for v in x:
        if abs(v) > amax:
            amax = abs(v); mx = v
    if amax < F(1e-15):
        return [0] * n, F(0)
    iscale = F(F(-nmax) / mx)
    L = [0] * n; slx = sl2 = F(0)
    for i in range(n):
        l = max(-nmax, min(nmax - 1, nearest_int(F(iscale * x[i]))))
        L[i] = l + nmax
        w = F(x[i] * x[i])
        slx = F(slx + F(F(w * x[i]) * F(l))); sl2 = F(sl2 + F(F(w * F(l)) * F(l)))
    scale = F(slx / sl2) if sl2 else F(0)
    best = F(scale * slx)
    for is_ in range(-9, 10):
        if is_ == 0:
            continue
        iscale = F(F(-F(F(nmax) + F(F(0.1) * F(is_)))) / mx)
        slx = sl2 = F(0)
        for i in range(n):
            l = max(-nmax, min(nmax - 1, nearest_int(F(iscale * x[i]))))
            w = F(x[i] * x[i])
            slx = F(slx + F(F(w * x[i]) * F(l))); sl2 = F(sl2 + F(F(w * F(l)) * F(l)))
        if sl2 > 0 and F(slx * slx) > F(best * sl2):
            for i in range(n):
                L[i] = nmax + max(-nmax, min(nmax - 1, nearest_int(F(iscale * x[i]))))
            scale = F(slx / sl2); best = F(scale * slx)
    return L, scale


def q_q6_k(x):
    out = b""
    for blk in np.asarray(x, F).reshape(-1, 256):
        L = [0] * 256; scales = [F(0)] * 16; max_scale = F(0); max_abs = F(0)
        for ib in range(16):
            Lb, scales[ib] = make_qx_quants(16, 32, blk[16 * ib:16 * ib + 16])
            L[16 * ib:16 * ib + 16] = Lb
            if abs(scales[ib]) > max_abs:
                max_abs = abs(scales[ib]); max_scale = scales[ib]
        if max_abs < F(1e-15):
            out += bytes(210)
            continue
        iscale = F(F(-128) / max_scale)
        dh = f2h(F(F(1) / iscale)); d16 = F(np.frombuffer(dh, "<f2")[0])
        sc = [min(127, nearest_int(F(iscale * s))) for s in scales]
        for j in range(16):
            d = F(d16 * F(sc[j]))
            if not d:
                continue
            for ii in range(16):
                L[16 * j + ii] = max(-32, min(31, nearest_int(F(blk[16 * j + ii] / d)))) + 32
        ql = bytearray(128); qh = bytearray(64)
        for h, j in enumerate(range(0, 256, 128)):
            for l in range(32):
                ql[64 * h + l] = (L[j + l] & 0xF) | ((L[j + l + 64] & 0xF) << 4)
                ql[64 * h + l + 32] = (L[j + l + 32] & 0xF) | ((L[j + l + 96] & 0xF) << 4)
                qh[32 * h + l] = ((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2)
                                  | ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6))
        out += bytes(ql) + bytes(qh) + np.array(sc, np.int8).tobytes() + dh
    return out


C_DEQUANT = {G.Q4_0: dq_q4_0, G.Q8_0: dq_q8_0, G.Q4_K: dq_q4_k, G.Q6_K: dq_q6_k}
C_QUANT = {G.Q4_0: q_q4_0, G.Q8_0: q_q8_0, G.Q4_K: q_q4_k, G.Q6_K: q_q6_k}
QTYPES = [G.Q4_0, G.Q8_0, G.Q4_K, G.Q6_K]


def _awkward_values(n_blocks, seed):
    """Random values with varying scales plus all-zero, constant, all-positive and
    single-spike sub-blocks."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(256 * n_blocks) * np.repeat(rng.uniform(0.001, 5, 16 * n_blocks), 16)
    x[:32] = 0
    x[256:272] = 0
    x[300:332] = 1.25
    x[400:464] = np.abs(x[400:464]) + 0.5
    x[200] = 40.0
    return x.astype(F)


# ---- metadata and container ---------------------------------------------------------

ALL_FIELDS = [
    ("general.architecture", G.STRING, "llama"),
    ("t.u8", G.UINT8, 255), ("t.i8", G.INT8, -128), ("t.u16", G.UINT16, 65535),
    ("t.i16", G.INT16, -32768), ("t.u32", G.UINT32, 4294967295), ("t.i32", G.INT32, -2147483648),
    ("t.f32", G.FLOAT32, 0.1), ("t.bool", G.BOOL, True), ("t.false", G.BOOL, False),
    ("t.str", G.STRING, "h\u00e9llo \u2581w\u00f6rld \U0001F600"), ("t.empty_str", G.STRING, ""),
    ("t.u64", G.UINT64, 2 ** 64 - 1), ("t.i64", G.INT64, -2 ** 63), ("t.f64", G.FLOAT64, 1e-300),
    ("t.arr_i32", G.ARRAY, (G.INT32, [1, -2, 3])), ("t.arr_f32", G.ARRAY, (G.FLOAT32, [0.5, -1.25])),
    ("t.arr_str", G.ARRAY, (G.STRING, ["a", "", "\u2581b"])), ("t.arr_bool", G.ARRAY, (G.BOOL, [True, False])),
    ("t.arr_empty", G.ARRAY, (G.UINT8, [])), ("t.arr_u64", G.ARRAY, (G.UINT64, [2 ** 64 - 1, 0])),
    ("t.arr_f64", G.ARRAY, (G.FLOAT64, [math.pi])),
    ("t.nested", G.ARRAY, (G.ARRAY, [(G.INT8, [1, 2]), (G.STRING, ["x"]), (G.ARRAY, [(G.BOOL, [True])])])),
]


def _expected(vtype, v):
    if vtype == G.FLOAT32:
        return float(F(v))
    if vtype == G.ARRAY:
        return (v[0], [_expected(v[0], it) for it in v[1]])
    return v


@pytest.mark.parametrize("version", [3, 2])
def test_metadata_round_trip_every_value_type(tmp_path, version):
    p = tmp_path / "m.gguf"
    G.write(str(p), ALL_FIELDS, [("w", np.arange(6, dtype=F).reshape(2, 3), G.F32)], version=version)
    g = G.read(str(p))
    assert g.version == version and g.alignment == 32
    want = [(k, t, _expected(t, v)) for k, t, v in ALL_FIELDS]
    want.insert(1, ("general.alignment", G.UINT32, 32))     # added after the architecture
    assert g.fields == want
    assert g.kv["t.nested"] == [[1, 2], ["x"], [[True]]]
    assert g.kv_types["t.u64"] == G.UINT64 and g.kv["t.bool"] is True
    np.testing.assert_array_equal(g.tensor("w"), np.arange(6, dtype=F).reshape(2, 3))


def test_container_layout(tmp_path):
    """Header fields, ne order, offsets relative to the aligned data section, padding."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(F)           # 60 bytes: next tensor needs padding
    b = rng.standard_normal((2, 64)).astype(F)
    c = rng.standard_normal((256,)).astype(F)
    p = tmp_path / "l.gguf"
    raw = G.write(str(p), [("general.architecture", G.STRING, "llama")],
                  [("a", a, G.F32), ("b", b, G.Q8_0), ("c", c, G.F16)], alignment=64)
    assert raw == p.read_bytes()
    assert raw[:4] == b"GGUF" and struct.unpack_from("<IQQ", raw, 4) == (3, 3, 2)
    g = G.read(str(p))
    assert g.alignment == 64 and g.kv["general.alignment"] == 64
    assert g.data_offset % 64 == 0 and raw[g.data_offset - 1] == 0
    ti = g.tensors
    assert list(ti) == ["a", "b", "c"]
    assert ti["a"].ne == (5, 3) and ti["b"].ne == (64, 2) and ti["c"].ne == (256,)
    assert [t.type for t in ti.values()] == [G.F32, G.Q8_0, G.F16]
    assert [t.offset for t in ti.values()] == [0, 64, 256]  # 60 -> 64, 64 + 136 -> 256
    assert ti["b"].nbytes == 2 * 2 * 34
    assert len(raw) == g.data_offset + 256 + 512            # the last tensor is padded too
    assert raw[g.data_offset + 60:g.data_offset + 64] == b"\0" * 4
    assert g.tensor_bytes("a") == a.astype("<f4").tobytes()
    np.testing.assert_array_equal(g.tensor("c"), c.astype(np.float16).astype(F))


def _raw_file(version=3, alignment=32, ne=(32,), gtype=G.F32, offset=0, data_len=128, magic=b"GGUF"):
    kv = G._pack_str("general.alignment") + struct.pack("<II", G.UINT32, alignment)
    info = G._pack_str("w") + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
    info += struct.pack("<IQ", gtype, offset)
    head = magic + struct.pack("<IQQ", version, 1, 1) + kv + info
    head += b"\0" * (-len(head) % max(alignment, 1))
    return head + b"\0" * data_len


@pytest.mark.parametrize("kw,msg", [
    (dict(magic=b"GGML"), "bad magic"),
    (dict(version=1), "unsupported GGUF version 1"),
    (dict(version=4), "unsupported GGUF version 4"),
    (dict(version=0x03000000), "big-endian"),
    (dict(alignment=24), "not a power of two"),
    (dict(offset=16), "not a multiple of the alignment"),
    (dict(ne=(64,)), "runs past the end"),
    (dict(gtype=99), "unknown ggml type 99"),
    (dict(gtype=G.Q8_0, ne=(48,)), "not a multiple of the Q8_0 block size"),
    (dict(ne=(1, 1, 1, 1, 1)), "5 dimensions"),
])
def test_reader_rejects_malformed_files(kw, msg):
    assert G.parse(_raw_file(), "ok").tensors["w"].ne == (32,)
    with pytest.raises(G.GGUFError, match=msg):
        G.parse(_raw_file(**kw), "bad.gguf")


def test_reader_rejects_truncation():
    raw = G.write("/dev/null", ALL_FIELDS, [("w", np.ones(32, F), G.F32)])
    G.parse(raw)
    for cut in (3, 20, 60, len(raw) // 2, len(raw) - 1):
        with pytest.raises(G.GGUFError, match="end of the file|end of file"):
            G.parse(raw[:cut], "cut.gguf")


# ---- block formats -------------------------------------------------------------------

def test_block_sizes():
    expect = {G.F32: (1, 4), G.F16: (1, 2), G.BF16: (1, 2), G.Q8_0: (32, 34), G.Q4_0: (32, 18),
              G.Q4_K: (256, 144), G.Q6_K: (256, 210)}
    x = np.random.default_rng(0).standard_normal((3, 512)).astype(F)
    for t, (blk, size) in expect.items():
        assert G.TYPE_INFO[t][1:] == (blk, size)
        assert len(G.quantize(t, x)) == x.size // blk * size == G.tensor_nbytes(t, x.size)
    assert (G.F32, G.F16, G.Q4_0, G.Q8_0, G.Q4_K, G.Q6_K, G.BF16) == (0, 1, 2, 8, 12, 14, 30)
    with pytest.raises(G.GGUFError):
        G.quantize(G.Q4_K, np.zeros((2, 128), F))


@pytest.mark.parametrize("t", QTYPES, ids=G.type_name)
def test_dequantize_matches_ggml_on_random_blocks(t):
    """Arbitrary block bytes (finite fp16 scales): the same float32 bits as ggml."""
    rng = np.random.default_rng(t)
    nb = 24
    blocks = np.frombuffer(rng.integers(0, 256, nb * G.TYPE_INFO[t][2], dtype=np.uint8).tobytes(),
                           G._BLOCK_DTYPES[t]).copy()
    for field in ("d", "dmin"):
        if field in blocks.dtype.names:
            blocks[field] = (rng.standard_normal(nb) * 10.0 ** rng.integers(-6, 2, nb)).astype(np.float16)
    raw = blocks.tobytes()
    got = G.dequantize(t, raw, nb * G.TYPE_INFO[t][1])
    np.testing.assert_array_equal(got.view(np.uint32), C_DEQUANT[t](raw).view(np.uint32))


def test_dequantize_known_blocks():
    h = lambda v: np.array([v], np.float16).tobytes()  # noqa: E731
    # Q8_0: d = 0.5, qs = -16..15
    q8 = h(0.5) + np.arange(-16, 16, dtype=np.int8).tobytes()
    np.testing.assert_array_equal(G.dequantize(G.Q8_0, q8, 32), np.arange(-16, 16) * 0.5)
    # Q4_0: d = 2, byte j = (j | (15 - j) << 4): low nibbles -> y[0:16], high -> y[16:32]
    q4 = h(2.0) + bytes(j | ((15 - j) << 4) for j in range(16))
    want = np.concatenate([np.arange(16) - 8, 15 - np.arange(16) - 8]) * 2.0
    np.testing.assert_array_equal(G.dequantize(G.Q4_0, q4, 32), want)
    # Q4_K: d = 1, dmin = 0.5; sub-block j has scale j + 1 and min 2j (j >= 4 use the packed high bits)
    sc, mn = np.arange(1, 9), 2 * np.arange(8) + 40
    s = np.zeros(12, np.uint8)
    s[0:4] = sc[:4] | ((sc[4:] >> 4) << 6)
    s[4:8] = mn[:4] | ((mn[4:] >> 4) << 6)
    s[8:12] = (sc[4:] & 0xF) | ((mn[4:] & 0xF) << 4)
    qs = np.array([(l % 16) | ((15 - l % 16) << 4) for l in range(32)] * 4, np.uint8)
    blk = h(1.0) + h(0.5) + s.tobytes() + qs.tobytes()
    y = G.dequantize(G.Q4_K, blk, 256).reshape(8, 32)
    lo, hi = np.arange(32) % 16, 15 - np.arange(32) % 16
    for j in range(8):
        np.testing.assert_array_equal(y[j], (sc[j] * (lo if j % 2 == 0 else hi) - 0.5 * mn[j]).astype(F))
    # Q6_K: element e = d * scale[e // 16] * (q - 32); q = e % 64 stored as ql/qh nibbles
    q = np.arange(256) % 64
    L = q.reshape(2, 4, 32)
    ql = np.concatenate([(L[:, 0] & 0xF) | ((L[:, 2] & 0xF) << 4), (L[:, 1] & 0xF) | ((L[:, 3] & 0xF) << 4)], 1)
    qh = (L[:, 0] >> 4) | ((L[:, 1] >> 4) << 2) | ((L[:, 2] >> 4) << 4) | ((L[:, 3] >> 4) << 6)
    scales = np.arange(-8, 8, dtype=np.int8)
    blk = ql.astype(np.uint8).tobytes() + qh.astype(np.uint8).tobytes() + scales.tobytes() + h(0.25)
    np.testing.assert_array_equal(G.dequantize(G.Q6_K, blk, 256), 0.25 * np.repeat(scales, 16) * (q - 32))


@pytest.mark.parametrize("t", QTYPES, ids=G.type_name)
def test_quantize_matches_ggml_reference_quantizer(t):
    x = _awkward_values(4 if t in (G.Q4_K, G.Q6_K) else 16, seed=t)
    assert G.quantize(t, x) == C_QUANT[t](x)


def test_float_types_round_trip():
    x = np.concatenate([_awkward_values(2, 1), np.array([np.inf, -np.inf, 0.0, -0.0, 1e-40], F)])
    np.testing.assert_array_equal(G.round_trip(G.F32, x).view(np.uint32), x.view(np.uint32))
    np.testing.assert_array_equal(G.round_trip(G.F16, x), x.astype(np.float16).astype(F))
    np.testing.assert_array_equal(G.round_trip(G.BF16, x), safetensors_io.round_to_dtype(x, "BF16"))
    assert G.round_trip(G.BF16, np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8], F)).tolist() == [1.0, 1 + 2 ** -6]


# per block: max |error| <= factor * step, step = amax/127 (Q8_0), amax/8 (Q4_0),
# amax/32 (Q6_K), (max - min(min, 0))/15 (Q4_K); relative RMS error of N(0, 1) values
BOUNDS = {G.Q8_0: (32, 0.57, 0.008), G.Q4_0: (32, 1.01, 0.11), G.Q6_K: (256, 0.75, 0.025),
          G.Q4_K: (256, 1.0, 0.09)}


@pytest.mark.parametrize("t", QTYPES, ids=G.type_name)
def test_round_trip_error_bounds(t):
    blk, factor, rel_rms = BOUNDS[t]
    rng = np.random.default_rng(7)
    # (the scales are fp16: the bounds hold while they are normal numbers, |x| >~ 0.25)
    for x in (rng.standard_normal(256 * 64), rng.uniform(-1, 1, 256 * 64) * 0.5,
              rng.standard_t(2, 256 * 64) * 30, rng.standard_normal(256 * 64) + 3, _awkward_values(8, 3)):
        x = x.astype(F)
        y = G.round_trip(t, x)
        xb, err = x.reshape(-1, blk), np.abs(y - x).reshape(-1, blk).max(axis=1)
        if t == G.Q4_K:
            step = (xb.max(axis=1) - np.minimum(xb.min(axis=1), 0)) / 15
        else:
            step = np.abs(xb).max(axis=1) / {G.Q8_0: 127, G.Q4_0: 8, G.Q6_K: 32}[t]
        assert np.all(err <= factor * step + 1e-30), (G.type_name(t), (err / step).max())
        if t != G.Q4_K:                                  # symmetric types keep zeros exact
            assert not np.any(y[x == 0])
    x = rng.standard_normal(256 * 64).astype(F)
    e = G.round_trip(t, x) - x
    assert np.sqrt((e * e).mean()) < rel_rms
    assert not np.any(G.round_trip(t, np.zeros(256, F)))


# ---- make_gguf_model ------------------------------------------------------------------

def test_generator_is_deterministic(tmp_path):
    a, b, c = (tmp_path / n for n in ("a.gguf", "b.gguf", "c.gguf"))
    M.main(["--arch", "qwen3", "--type", "q4_k_m", "--untied", "--seed", "4", "--out", str(a)])
    M.make_model(str(b), "qwen3", "q4_k_m", tied=False, seed=4)
    M.make_model(str(c), "qwen3", "q4_k_m", tied=False, seed=5)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    # the same draws whatever the storage type
    f32 = tmp_path / "f.gguf"
    M.make_model(str(f32), "qwen3", "f32", tied=False, seed=4)
    ga, gf = G.read(str(a)), G.read(str(f32))
    for name in ("blk.0.attn_norm.weight", "blk.1.attn_k_norm.weight"):
        np.testing.assert_array_equal(ga.tensor(name), gf.tensor(name))
    np.testing.assert_array_equal(ga.tensor("output.weight"), G.round_trip(G.Q6_K, gf.tensor("output.weight")))


def _required_keys(arch):
    u32, f32 = G.UINT32, G.FLOAT32
    keys = {"general.architecture": G.STRING, "general.alignment": u32, "general.file_type": u32,
            arch + ".context_length": u32, arch + ".embedding_length": u32,
            arch + ".feed_forward_length": u32, arch + ".block_count": u32,
            arch + ".attention.head_count": u32, arch + ".attention.head_count_kv": u32,
            arch + ".rope.freq_base": f32, arch + ".attention.layer_norm_rms_epsilon": f32,
            arch + ".rope.dimension_count": u32, arch + ".vocab_size": u32,
            "tokenizer.ggml.model": G.STRING, "tokenizer.ggml.tokens": G.ARRAY,
            "tokenizer.ggml.scores": G.ARRAY, "tokenizer.ggml.token_type": G.ARRAY,
            "tokenizer.ggml.bos_token_id": u32, "tokenizer.ggml.eos_token_id": u32}
    if arch == "qwen3":
        keys.update({arch + ".attention.key_length": u32, arch + ".attention.value_length": u32})
    return keys


Q4_K_M_TYPES = {"token_embd.weight": G.Q4_K, "output.weight": G.Q6_K,
                "blk.0.attn_v.weight": G.Q4_K, "blk.1.attn_v.weight": G.Q6_K,
                "blk.0.ffn_down.weight": G.Q4_K, "blk.1.ffn_down.weight": G.Q6_K,
                "blk.0.attn_q.weight": G.Q4_K, "blk.1.ffn_gate.weight": G.Q4_K}


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
@pytest.mark.parametrize("mtype", list(M.TYPES))
def test_generated_metadata_and_tensors(tmp_path, arch, mtype):
    p = tmp_path / "m.gguf"
    tied = mtype in ("f16", "q4_0")
    M.make_model(str(p), arch, mtype, tied=tied, seed=1)
    g = G.read(str(p))
    kv = g.kv
    for key, vtype in _required_keys(arch).items():
        assert g.kv_types.get(key) == vtype, key
    hd = 64 if arch == "qwen3" else 32
    assert kv["general.architecture"] == arch and kv["general.alignment"] == 32 and g.alignment == 32
    assert kv["general.file_type"] == M.TYPES[mtype][1]
    assert (kv[arch + ".context_length"], kv[arch + ".embedding_length"], kv[arch + ".feed_forward_length"],
            kv[arch + ".block_count"], kv[arch + ".attention.head_count"],
            kv[arch + ".attention.head_count_kv"], kv[arch + ".rope.dimension_count"]) == (256, 256, 512, 2, 8, 2, hd)
    assert kv[arch + ".rope.freq_base"] == (1e4 if arch == "llama" else 1e6)
    assert kv[arch + ".attention.layer_norm_rms_epsilon"] == float(F(1e-5 if arch == "llama" else 1e-6))
    if arch == "qwen3":
        assert kv["qwen3.attention.key_length"] == kv["qwen3.attention.value_length"] == 64
    else:
        assert "llama.attention.key_length" not in kv
    tok = kv["tokenizer.ggml.tokens"]
    assert kv["tokenizer.ggml.model"] == "llama" and len(tok) == 512 == len(set(tok))
    assert tok[:4] == ["<unk>", "<s>", "</s>", "<0x00>"] and tok[258] == "<0xFF>"
    assert g.fields[[f[0] for f in g.fields].index("tokenizer.ggml.token_type")][2][0] == G.INT32
    assert kv["tokenizer.ggml.token_type"][:4] == [2, 3, 3, 6] and kv["tokenizer.ggml.token_type"][300] == 1
    assert len(kv["tokenizer.ggml.scores"]) == 512
    assert (kv["tokenizer.ggml.bos_token_id"], kv["tokenizer.ggml.eos_token_id"]) == (1, 2)
    nq, nkv = 8 * hd, 2 * hd
    shapes = {"token_embd.weight": (512, 256), "output_norm.weight": (256,)}
    if not tied:
        shapes["output.weight"] = (512, 256)
    for i in range(2):
        b = "blk.%d." % i
        shapes.update({b + "attn_norm.weight": (256,), b + "attn_q.weight": (nq, 256),
                       b + "attn_k.weight": (nkv, 256), b + "attn_v.weight": (nkv, 256),
                       b + "attn_output.weight": (256, nq), b + "ffn_norm.weight": (256,),
                       b + "ffn_gate.weight": (512, 256), b + "ffn_up.weight": (512, 256),
                       b + "ffn_down.weight": (256, 512)})
        if arch == "qwen3":
            shapes.update({b + "attn_q_norm.weight": (hd,), b + "attn_k_norm.weight": (hd,)})
    assert {n: t.shape for n, t in g.tensors.items()} == shapes
    assert all(t.ne == tuple(reversed(shapes[n])) for n, t in g.tensors.items())
    for name, t in g.tensors.items():
        if len(t.ne) == 1:
            assert t.type == G.F32, name
        elif mtype == "q4_k_m":
            assert t.type == Q4_K_M_TYPES.get(name, G.Q4_K), name
        else:
            assert t.type == M.TYPES[mtype][0], name


def test_q4_k_m_tied_embedding_is_q6_k(tmp_path):
    p = tmp_path / "m.gguf"
    M.make_model(str(p), "llama", "q4_k_m", tied=True, seed=0)
    g = G.read(str(p))
    assert "output.weight" not in g.tensors and g.tensors["token_embd.weight"].type == G.Q6_K
    assert [M.use_more_bits(i, 32) for i in (0, 3, 4, 5, 6, 7, 8, 27, 28, 31)] == \
        [True, True, False, False, True, False, False, True, True, True]


def _interleaved_rope(x, pos, theta):
    """llama.cpp NORM RoPE: rotate adjacent pairs (x[2i], x[2i+1]) by pos * theta^(-2i/d)."""
    d = x.shape[-1]
    ang = pos * theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * np.cos(ang) - b * np.sin(ang)
    out[..., 1::2] = a * np.sin(ang) + b * np.cos(ang)
    return out


def _rotate_half_rope(x, pos, theta):
    d = x.shape[-1]
    ang = pos * theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    c, s = np.cos(np.concatenate([ang, ang])), np.sin(np.concatenate([ang, ang]))
    return x * c + np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1) * s


def test_llama_qk_permutation(tmp_path):
    """GGUF llama q/k = permute(HF q/k); interleaved RoPE on them gives the same
    scores as rotate-half RoPE on the HF weights; gguf_torch_ref undoes it."""
    p, hf = tmp_path / "m.gguf", tmp_path / "hf"
    cfg = M.make_model(str(p), "llama", "f32", tied=True, seed=2, hf_out=str(hf))
    g = G.read(str(p))
    w = M.hf_tensors(cfg, 2)
    q_hf, k_hf = w["model.layers.1.self_attn.q_proj.weight"], w["model.layers.1.self_attn.k_proj.weight"]
    q_gg, k_gg = g.tensor("blk.1.attn_q.weight"), g.tensor("blk.1.attn_k.weight")
    hd = 32
    # row h*hd + 2i + j of the GGUF tensor is HF row h*hd + j*hd/2 + i
    h, i, j = 5, 3, 1
    np.testing.assert_array_equal(q_gg[h * hd + 2 * i + j], q_hf[h * hd + j * hd // 2 + i])
    np.testing.assert_array_equal(q_gg, M.permute(q_hf, 8))
    np.testing.assert_array_equal(k_gg, M.permute(k_hf, 2))
    np.testing.assert_array_equal(gguf_torch_ref.unpermute(q_gg, 8), q_hf)
    np.testing.assert_array_equal(M.unpermute(k_gg, 2), k_hf)
    assert not np.array_equal(q_gg, q_hf)
    np.testing.assert_array_equal(g.tensor("blk.1.attn_v.weight"), w["model.layers.1.self_attn.v_proj.weight"])
    x = np.random.default_rng(0).standard_normal(256)
    for pos_q, pos_k in ((7, 3), (200, 0)):
        qh = (q_hf @ x).reshape(8, hd)[:, None]
        kh = (k_hf @ x).reshape(2, hd)[None]
        qg = (q_gg @ x).reshape(8, hd)[:, None]
        kg = (k_gg @ x).reshape(2, hd)[None]
        s_hf = (_rotate_half_rope(qh, pos_q, 1e4) * _rotate_half_rope(kh, pos_k, 1e4)).sum(-1)
        s_gg = (_interleaved_rope(qg, pos_q, 1e4) * _interleaved_rope(kg, pos_k, 1e4)).sum(-1)
        np.testing.assert_allclose(s_gg, s_hf, rtol=1e-9, atol=1e-9)
        # and naively applying rotate-half to the GGUF layout would be wrong
        s_bad = (_rotate_half_rope(qg, pos_q, 1e4) * _rotate_half_rope(kg, pos_k, 1e4)).sum(-1)
        assert np.abs(s_bad - s_hf).max() > 1e-3


# ---- gguf_torch_ref ---------------------------------------------------------------------

@pytest.mark.parametrize("arch,tied", [("llama", True), ("llama", False), ("qwen3", True), ("qwen3", False)])
def test_f32_gguf_reference_equals_hf_reference(tmp_path, arch, tied):
    p, hf = tmp_path / "m.gguf", tmp_path / "hf"
    M.make_model(str(p), arch, "f32", tied=tied, seed=11, hf_out=str(hf))
    cfg, w = gguf_torch_ref.gguf_to_hf(str(p))
    st = safetensors_io.load_checkpoint_dir(str(hf))
    assert sorted(w) == sorted(st)
    for k in w:
        np.testing.assert_array_equal(w[k], st[k], err_msg=k)
    gp, gs, gi = gguf_torch_ref.reference(str(p), PROMPT, 8)
    hp, hs, hi = hf_torch_ref.reference(str(hf), PROMPT, 8)
    assert gp.shape == (len(PROMPT), 512) and gs.shape == (8, 512)
    assert np.abs(gp - hp).max() <= 1e-5 and np.abs(gs - hs).max() <= 1e-5
    assert gi == hi


# relative RMS error of every matrix after storage, per type (1-D norms are exact)
TENSOR_REL_RMS = {"f16": 1e-3, "bf16": 5e-3, "q8_0": 0.01, "q4_0": 0.12, "q4_k_m": 0.1}


@pytest.mark.parametrize("mtype", list(TENSOR_REL_RMS))
def test_quantized_gguf_dequantizes_close_to_the_weights(tmp_path, mtype):
    p, hf = tmp_path / "m.gguf", tmp_path / "hf"
    M.make_model(str(p), "llama", mtype, tied=False, seed=3, hf_out=str(hf))
    _, w = gguf_torch_ref.gguf_to_hf(str(p))
    st = safetensors_io.load_checkpoint_dir(str(hf))
    for k, ref in st.items():
        e = w[k] - ref
        rel = np.sqrt((e * e).mean() / (ref * ref).mean())
        assert rel <= (0 if ref.ndim == 1 else TENSOR_REL_RMS[mtype]), (k, rel)


def test_reference_cli(tmp_path):
    p = tmp_path / "m.gguf"
    M.make_model(str(p), "qwen3", "q8_0", tied=True, seed=6)
    out = {n: tmp_path / n for n in ("p.npy", "s.npy", "i.txt")}
    subprocess.run([sys.executable, gguf_torch_ref.__file__, "--model", str(p), "--prompt-ids",
                    ",".join(map(str, PROMPT[:10])), "--steps", "4", "--out-prompt-logits",
                    str(out["p.npy"]), "--out-step-logits", str(out["s.npy"]), "--out-ids",
                    str(out["i.txt"]), "--save-hf", str(tmp_path / "hf")], check=True,
                   timeout=e2e_util.TIMEOUT)
    pl, sl = np.load(out["p.npy"]), np.load(out["s.npy"])
    ids = [int(s) for s in out["i.txt"].read_text().split()]
    assert pl.shape == (10, 512) and sl.shape == (4, 512) and len(ids) == 4
    assert pl.dtype == np.float32 and np.isfinite(pl).all()
    hp, hs, hi = hf_torch_ref.reference(str(tmp_path / "hf"), PROMPT[:10], 4)
    np.testing.assert_array_equal(pl, hp)
    assert hi == ids and np.array_equal(sl[0], pl[-1])
