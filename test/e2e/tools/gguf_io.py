#!/usr/bin/env python3
"""Plain-Python GGUF reader and writer, with llama.cpp's block quantization
formats, for the llmc GGUF importer tests (no `gguf` package needed).

File layout (little-endian only; GGUF v3, reads v2 which is identical):
  "GGUF" u32 version, u64 n_tensors, u64 n_kv,
  n_kv x (string key, u32 value_type, value),
  n_tensors x (string name, u32 n_dims, u64 ne[n_dims] innermost first,
               u32 ggml_type, u64 offset relative to the data section),
  zero padding to `general.alignment` (u32, default 32), the data section;
  every tensor offset is a multiple of the alignment, each tensor is padded.
  string = u64 byte length + UTF-8 bytes (no NUL);
  array  = u32 element type, u64 count, elements (arrays may nest).

Tensor types: F32 (0), F16 (1), Q4_0 (2), Q8_0 (8), Q4_K (12), Q6_K (14),
BF16 (30). dequantize() is a vectorised transcription of ggml's
dequantize_row_* and gives the same float32 bits (float32 products and
differences rounded one operation at a time, as the C code does without FMA
contraction). quantize() transcribes quantize_row_{q4_0,q8_0,q4_K,q6_K}_ref
(float32 throughout, sums accumulated left to right, ggml's nearest_int and
roundf), fp32->fp16 and ggml's fp32->bf16 (round to nearest even); the tests
check it byte for byte against a scalar transcription of the C code. (A C build
that contracts a*b+c into FMA can differ from both in rare last bits.)

  write(path, fields, tensors, alignment=None, version=3, magic=b"GGUF")
  read(path) -> GGUFFile   (.version .alignment .fields .kv .tensors
                            .tensor(name) -> float32 array in PyTorch order)
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402  (bf16 conversion, identical to ggml's)

# ---- metadata value types ---------------------------------------------------------
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
           FLOAT32: "<f", BOOL: "<B", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}
VALUE_TYPE_NAMES = {UINT8: "u8", INT8: "i8", UINT16: "u16", INT16: "i16", UINT32: "u32",
                    INT32: "i32", FLOAT32: "f32", BOOL: "bool", STRING: "string",
                    ARRAY: "array", UINT64: "u64", INT64: "i64", FLOAT64: "f64"}

# ---- ggml tensor types: id -> (name, elements per block, bytes per block) -------------
F32, F16, Q4_0, Q8_0, Q4_K, Q6_K, BF16 = 0, 1, 2, 8, 12, 14, 30
QK_K = 256
TYPE_INFO = {
    F32: ("F32", 1, 4), F16: ("F16", 1, 2), Q4_0: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), Q8_0: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), Q4_K: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), Q6_K: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8),
    28: ("F64", 1, 8), BF16: ("BF16", 1, 2),
}
SUPPORTED_TYPES = (F32, F16, Q4_0, Q8_0, Q4_K, Q6_K, BF16)
TYPE_BY_NAME = {v[0]: k for k, v in TYPE_INFO.items()}
MAX_DIMS = 4
DEFAULT_ALIGNMENT = 32


class GGUFError(ValueError):
    pass


def type_name(t):
    return TYPE_INFO[t][0] if t in TYPE_INFO else "type%d" % t


def tensor_nbytes(ggml_type, n_elements):
    _, blk, size = TYPE_INFO[ggml_type]
    if n_elements % blk:
        raise GGUFError("%d elements is not a multiple of the %s block size %d"
                        % (n_elements, type_name(ggml_type), blk))
    return n_elements // blk * size


# ---- block structures (numpy views of ggml's structs) ----------------------------------
_BLOCK_DTYPES = {
    Q4_0: np.dtype([("d", "<f2"), ("qs", "u1", 16)]),
    Q8_0: np.dtype([("d", "<f2"), ("qs", "i1", 32)]),
    Q4_K: np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)]),
    Q6_K: np.dtype([("ql", "u1", 128), ("qh", "u1", 64), ("scales", "i1", 16), ("d", "<f2")]),
}
for _t, _dt in _BLOCK_DTYPES.items():
    assert _dt.itemsize == TYPE_INFO[_t][2], _t

_f32 = np.float32


def _seqsum(a):
    """Row sums accumulated left to right in float32, like ggml's C loops."""
    return np.cumsum(np.asarray(a, np.float32), axis=1, dtype=np.float32)[:, -1]


def _nearest_int(v):
    """ggml's nearest_int (round half to even on a float32 value)."""
    return np.rint(np.asarray(v, np.float32)).astype(np.int32)


# ---- dequantization (exactly ggml's dequantize_row_*) --------------------------------------

def _dq_q4_0(b):
    d = b["d"].astype(_f32)[:, None]
    qs = b["qs"]
    q = np.concatenate([(qs & 0xF).astype(np.int32) - 8, (qs >> 4).astype(np.int32) - 8], axis=1)
    return q.astype(_f32) * d


def _dq_q8_0(b):
    return b["qs"].astype(_f32) * b["d"].astype(_f32)[:, None]


def _scale_min_k4(s):
    """get_scale_min_k4 for j = 0..7 on scales [nb, 12] -> (sc, m) uint8 [nb, 8]."""
    s = s.astype(np.uint8)
    sc = np.empty((s.shape[0], 8), np.uint8)
    m = np.empty((s.shape[0], 8), np.uint8)
    sc[:, :4] = s[:, 0:4] & 63
    m[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, m


def _dq_q4_k(b):
    nb = b.shape[0]
    d = b["d"].astype(_f32)[:, None]
    dmin = b["dmin"].astype(_f32)[:, None]
    sc, m = _scale_min_k4(b["scales"])
    d1 = d * sc.astype(_f32)          # [nb, 8]  (d * sc)
    m1 = dmin * m.astype(_f32)        # [nb, 8]  (min * m)
    qs = b["qs"].reshape(nb, 4, 1, 32)
    q = np.concatenate([qs & 0xF, qs >> 4], axis=2).reshape(nb, 8, 32).astype(_f32)
    return (d1[:, :, None] * q - m1[:, :, None]).reshape(nb, QK_K)


def _dq_q6_k(b):
    nb = b.shape[0]
    ql = b["ql"].reshape(nb, 2, 64)
    qh = b["qh"].reshape(nb, 2, 32)
    lo = ql[:, :, :32], ql[:, :, 32:]
    q1 = (lo[0] & 0xF) | (((qh >> 0) & 3) << 4)
    q2 = (lo[1] & 0xF) | (((qh >> 2) & 3) << 4)
    q3 = (lo[0] >> 4) | (((qh >> 4) & 3) << 4)
    q4 = (lo[1] >> 4) | (((qh >> 6) & 3) << 4)
    q = np.stack([q1, q2, q3, q4], axis=2).astype(np.int32) - 32      # [nb, 2, 4, 32]
    q = q.reshape(nb, 16, 16).astype(_f32)                            # element e uses scale e // 16
    ds = b["d"].astype(_f32)[:, None] * b["scales"].astype(_f32)       # d * sc[is]
    return (ds[:, :, None] * q).reshape(nb, QK_K)


def dequantize(ggml_type, data, n_elements):
    """Raw tensor bytes -> float32 array of n_elements (ggml's dequantize_row_*)."""
    nbytes = tensor_nbytes(ggml_type, n_elements)
    buf = memoryview(data)[:nbytes]
    if len(buf) != nbytes:
        raise GGUFError("need %d bytes of %s data, have %d" % (nbytes, type_name(ggml_type), len(buf)))
    if ggml_type == F32:
        return np.frombuffer(buf, "<f4").astype(_f32)
    if ggml_type == F16:
        return np.frombuffer(buf, "<f2").astype(_f32)
    if ggml_type == BF16:
        return safetensors_io.bf16_bits_to_f32(np.frombuffer(buf, "<u2"))
    fn = {Q4_0: _dq_q4_0, Q8_0: _dq_q8_0, Q4_K: _dq_q4_k, Q6_K: _dq_q6_k}.get(ggml_type)
    if fn is None:
        raise GGUFError("dequantization of %s is not implemented" % type_name(ggml_type))
    return fn(np.frombuffer(buf, _BLOCK_DTYPES[ggml_type])).reshape(-1)


# ---- quantization ---------------------------------------------------------------------

def _blocks(x, n):
    x = np.ascontiguousarray(x, _f32).reshape(-1)
    if x.size % n:
        raise GGUFError("%d elements is not a multiple of the block size %d" % (x.size, n))
    return x.reshape(-1, n)


def _first_absmax(x):
    """(amax, signed value of the first element with the largest |x|) per row."""
    i = np.argmax(np.abs(x), axis=1)
    mx = x[np.arange(x.shape[0]), i]
    return np.abs(mx), mx


def _q_q4_0(x):
    x = _blocks(x, 32)
    _, mx = _first_absmax(x)
    d = (mx / _f32(-8)).astype(_f32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, _f32(1) / d, _f32(0)).astype(_f32)
    v = (x * idv[:, None]).astype(_f32) + _f32(8.5)                  # float32, as in C
    xi = np.minimum(15, np.trunc(v).astype(np.int32)).astype(np.uint8)  # (int8_t) truncates
    out = np.zeros(x.shape[0], _BLOCK_DTYPES[Q4_0])
    out["d"] = d.astype(np.float16)
    out["qs"] = xi[:, :16] | (xi[:, 16:] << 4)
    return out.tobytes()


def _roundf(v):
    """C roundf (half away from zero) of float32 values."""
    v = np.asarray(v, np.float64)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _q_q8_0(x):
    x = _blocks(x, 32)
    amax = np.abs(x).max(axis=1)
    d = (amax / _f32(127)).astype(_f32)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, _f32(1) / d, _f32(0)).astype(_f32)
    out = np.zeros(x.shape[0], _BLOCK_DTYPES[Q8_0])
    out["d"] = d.astype(np.float16)
    out["qs"] = _roundf((x * idv[:, None]).astype(_f32)).astype(np.int8)
    return out.tobytes()


def _make_qkx2_quants(x, w, nmax, rmin, rdelta, nstep):
    """ggml's make_qkx2_quants (use_mad = false) on rows of x -> (L, scale, the_min)."""
    f = _f32
    mn = np.minimum(x.min(axis=1), f(0))
    mx = x.max(axis=1)
    sum_w = _seqsum(w)
    sum_x = _seqsum(w * x)
    flat = mx == mn
    rng = np.where(flat, f(1), mx - mn).astype(f)
    iscale = (f(nmax) / rng).astype(f)
    scale = (f(1) / iscale).astype(f)
    L = np.clip(_nearest_int(iscale[:, None] * (x - mn[:, None])), 0, nmax)
    diff = scale[:, None] * L.astype(f) + mn[:, None] - x
    best = _seqsum(w * (diff * diff))
    for step in range(nstep + 1):
        rng = np.where(flat, f(1), mx - mn).astype(f)       # min moves with the best fit
        iscale = ((f(rmin) + f(rdelta) * f(step) + f(nmax)) / rng).astype(f)
        la = np.clip(_nearest_int(iscale[:, None] * (x - mn[:, None])), 0, nmax).astype(f)
        sum_l = _seqsum(w * la)
        sum_l2 = _seqsum(w * la * la)
        sum_xl = _seqsum(w * la * x)
        D = sum_w * sum_l2 - sum_l * sum_l
        ok = D > 0
        Ds = np.where(ok, D, f(1))
        this_scale = ((sum_w * sum_xl - sum_x * sum_l) / Ds).astype(f)
        this_min = ((sum_l2 * sum_x - sum_l * sum_xl) / Ds).astype(f)
        pos = this_min > 0
        this_min = np.where(pos, f(0), this_min)
        with np.errstate(divide="ignore", invalid="ignore"):
            this_scale = np.where(pos, sum_xl / sum_l2, this_scale).astype(f)
        diff = this_scale[:, None] * la + this_min[:, None] - x
        cur = _seqsum(w * (diff * diff))
        better = ok & (cur < best) & ~flat
        L = np.where(better[:, None], la.astype(np.int32), L)
        best = np.where(better, cur, best)
        scale = np.where(better, this_scale, scale)
        mn = np.where(better, this_min, mn)
    L = np.where(flat[:, None], 0, L)
    scale = np.where(flat, f(0), scale)
    return L, scale.astype(f), (-mn).astype(f)


def _q_q4_k(x):
    f = _f32
    x = _blocks(x, QK_K)
    nb = x.shape[0]
    xs = x.reshape(nb * 8, 32)
    av_x = np.sqrt(_seqsum(xs * xs) / f(32)).astype(f)
    w = (av_x[:, None] + np.abs(xs)).astype(f)
    L, scales, mins = _make_qkx2_quants(xs, w, 15, -1.0, 0.1, 20)
    L, scales, mins = L.reshape(nb, 8, 32), scales.reshape(nb, 8), mins.reshape(nb, 8)
    max_scale = np.maximum(scales.max(axis=1), f(0))
    max_min = np.maximum(mins.max(axis=1), f(0))
    with np.errstate(divide="ignore"):
        inv_scale = np.where(max_scale > 0, f(63) / max_scale, f(0)).astype(f)
        inv_min = np.where(max_min > 0, f(63) / max_min, f(0)).astype(f)
    ls = np.clip(_nearest_int(inv_scale[:, None] * scales), 0, 63).astype(np.uint8)
    lm = np.clip(_nearest_int(inv_min[:, None] * mins), 0, 63).astype(np.uint8)
    s = np.zeros((nb, 12), np.uint8)
    s[:, 0:4] = ls[:, :4] | ((ls[:, 4:] >> 4) << 6)
    s[:, 4:8] = lm[:, :4] | ((lm[:, 4:] >> 4) << 6)
    s[:, 8:12] = (ls[:, 4:] & 0xF) | ((lm[:, 4:] & 0xF) << 4)
    out = np.zeros(nb, _BLOCK_DTYPES[Q4_K])
    out["d"] = (max_scale / f(63)).astype(f).astype(np.float16)
    out["dmin"] = (max_min / f(63)).astype(f).astype(np.float16)
    out["scales"] = s
    sc, m = _scale_min_k4(s)
    d = out["d"].astype(f)[:, None] * sc.astype(f)
    dm = out["dmin"].astype(f)[:, None] * m.astype(f)
    nz = d != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        l2 = np.clip(_nearest_int((x.reshape(nb, 8, 32) + dm[:, :, None]) / np.where(nz, d, f(1))[:, :, None]), 0, 15)
    L = np.where(nz[:, :, None], l2, L).astype(np.uint8).reshape(nb, 4, 64)
    out["qs"] = (L[:, :, :32] | (L[:, :, 32:] << 4)).reshape(nb, 128)
    return out.tobytes()


def _make_qx_quants_rmse1(x, nmax):
    """ggml's make_qx_quants(n, nmax, x, L, rmse_type = 1, NULL) on rows -> (L, scale)."""
    f = _f32
    amax, mx = _first_absmax(x)
    zero = amax < f(1e-15)
    mxs = np.where(zero, f(1), mx).astype(f)
    w = (x * x).astype(f)

    def attempt(iscale):
        l = np.clip(_nearest_int(iscale[:, None] * x), -nmax, nmax - 1)
        lf = l.astype(f)
        return l, _seqsum(w * x * lf), _seqsum(w * lf * lf)

    iscale = (f(-nmax) / mxs).astype(f)
    L, sumlx, suml2 = attempt(iscale)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(suml2 != 0, sumlx / suml2, f(0)).astype(f)
    best = (scale * sumlx).astype(f)
    for step in range(-9, 10):
        if step == 0:
            continue
        iscale = (-(f(nmax) + f(0.1) * f(step)) / mxs).astype(f)
        l, sumlx, suml2 = attempt(iscale)
        better = (suml2 > 0) & (sumlx * sumlx > best * suml2)
        L = np.where(better[:, None], l, L)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(better, sumlx / suml2, scale).astype(f)
        best = np.where(better, scale * sumlx, best).astype(f)
    L = np.where(zero[:, None], 0, L + nmax)
    return L, np.where(zero, f(0), scale).astype(f)


def _q_q6_k(x):
    f = _f32
    x = _blocks(x, QK_K)
    nb = x.shape[0]
    L, scales = _make_qx_quants_rmse1(x.reshape(nb * 16, 16), 32)
    L, scales = L.reshape(nb, 16, 16), scales.reshape(nb, 16)
    _, max_scale = _first_absmax(scales)
    zero = np.abs(max_scale) < f(1e-15)
    with np.errstate(divide="ignore"):
        iscale = np.where(zero, f(0), f(-128) / np.where(zero, f(1), max_scale)).astype(f)
        dval = np.where(zero, f(0), f(1) / np.where(zero, f(1), iscale)).astype(f)
    out = np.zeros(nb, _BLOCK_DTYPES[Q6_K])
    out["d"] = dval.astype(np.float16)
    sc = np.clip(_nearest_int(iscale[:, None] * scales), -128, 127)
    out["scales"] = np.where(zero[:, None], 0, sc).astype(np.int8)
    d = out["d"].astype(f)[:, None] * out["scales"].astype(f)
    nz = d != 0
    l2 = np.clip(_nearest_int(x.reshape(nb, 16, 16) / np.where(nz, d, f(1))[:, :, None]), -32, 31) + 32
    L = np.where(nz[:, :, None], l2, L)
    L = np.where(zero[:, None, None], 0, L).astype(np.uint8).reshape(nb, 2, 4, 32)
    ql = np.concatenate([(L[:, :, 0] & 0xF) | ((L[:, :, 2] & 0xF) << 4),
                         (L[:, :, 1] & 0xF) | ((L[:, :, 3] & 0xF) << 4)], axis=2)
    qh = (L[:, :, 0] >> 4) | ((L[:, :, 1] >> 4) << 2) | ((L[:, :, 2] >> 4) << 4) | ((L[:, :, 3] >> 4) << 6)
    out["ql"] = ql.reshape(nb, 128)
    out["qh"] = qh.reshape(nb, 64)
    return out.tobytes()


def quantize(ggml_type, x):
    """float32 values (any shape; rows of the innermost dimension, which must be a
    multiple of the block size) -> raw bytes of the ggml type."""
    x = np.ascontiguousarray(x, _f32)
    if ggml_type == F32:
        return x.astype("<f4").tobytes()
    if ggml_type == F16:
        return x.astype("<f2").tobytes()
    if ggml_type == BF16:
        return safetensors_io.f32_to_bf16_bits(x).astype("<u2").tobytes()
    fn = {Q4_0: _q_q4_0, Q8_0: _q_q8_0, Q4_K: _q_q4_k, Q6_K: _q_q6_k}.get(ggml_type)
    if fn is None:
        raise GGUFError("quantization to %s is not implemented" % type_name(ggml_type))
    if x.ndim and x.shape[-1] % TYPE_INFO[ggml_type][1]:
        raise GGUFError("row length %d is not a multiple of the %s block size %d"
                        % (x.shape[-1], type_name(ggml_type), TYPE_INFO[ggml_type][1]))
    return fn(x)


def round_trip(ggml_type, x):
    """dequantize(quantize(x)) with x's shape."""
    x = np.asarray(x, _f32)
    return dequantize(ggml_type, quantize(ggml_type, x), x.size).reshape(x.shape)


# ---- writer ----------------------------------------------------------------------------

def _pack_str(s):
    b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def pack_value(vtype, v):
    """Bytes of one metadata value. ARRAY values are (element_type, items); an
    item of a nested array is again (element_type, items)."""
    if vtype in _SCALAR:
        if vtype == BOOL:
            v = 1 if v else 0
        return struct.pack(_SCALAR[vtype], v)
    if vtype == STRING:
        return _pack_str(v)
    if vtype == ARRAY:
        etype, items = v
        head = struct.pack("<IQ", etype, len(items))
        if etype in _SCALAR and etype != BOOL:
            return head + np.asarray(items, _SCALAR[etype]).tobytes()
        return head + b"".join(pack_value(etype, it) for it in items)
    raise GGUFError("unknown metadata value type %r" % (vtype,))


class Tensor:
    """A tensor to write: `shape` in PyTorch order ([out, in]); ne = reversed."""

    def __init__(self, name, shape, ggml_type, data):
        self.name, self.shape, self.type, self.data = name, tuple(int(s) for s in shape), ggml_type, data

    @classmethod
    def from_array(cls, name, array, ggml_type):
        array = np.asarray(array, _f32)
        return cls(name, array.shape, ggml_type, quantize(ggml_type, array))


def write(path, fields, tensors, alignment=None, version=3, magic=b"GGUF"):
    """fields: [(key, value_type, value)]; tensors: [Tensor] or [(name, float32 array
    in PyTorch order, ggml_type)]. `general.alignment` (u32) is added after
    `general.architecture` unless present; its value (or `alignment`, default 32)
    aligns the data section. Returns the file's bytes."""
    fields = list(fields)
    keys = [k for k, _, _ in fields]
    if "general.alignment" in keys:
        al = fields[keys.index("general.alignment")][2]
        alignment = alignment or al
    else:
        alignment = alignment or DEFAULT_ALIGNMENT
        at = keys.index("general.architecture") + 1 if "general.architecture" in keys else 0
        fields.insert(at, ("general.alignment", UINT32, alignment))
    ts = [t if isinstance(t, Tensor) else Tensor.from_array(*t) for t in tensors]
    out = bytearray(magic + struct.pack("<IQQ", version, len(ts), len(fields)))
    for key, vtype, v in fields:
        out += _pack_str(key) + struct.pack("<I", vtype) + pack_value(vtype, v)
    offset = 0
    offsets = []
    for t in ts:
        ne = list(reversed(t.shape)) or [1]
        out += _pack_str(t.name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        out += struct.pack("<IQ", t.type, offset)
        offsets.append(offset)
        offset += len(t.data)
        offset += -offset % alignment
    out += b"\0" * (-len(out) % alignment)
    start = len(out)
    for t, off in zip(ts, offsets):
        assert len(out) == start + off
        out += t.data
        out += b"\0" * (-len(out) % alignment)
    with open(path, "wb") as f:
        f.write(out)
    return bytes(out)


# ---- reader ----------------------------------------------------------------------------

class TensorInfo:
    def __init__(self, name, ne, ggml_type, offset):
        self.name, self.ne, self.type, self.offset = name, tuple(ne), ggml_type, offset

    @property
    def shape(self):
        """PyTorch order (ne reversed)."""
        return tuple(reversed(self.ne))

    @property
    def n_elements(self):
        return int(np.prod(self.ne, dtype=np.int64))

    @property
    def nbytes(self):
        return tensor_nbytes(self.type, self.n_elements)

    def __repr__(self):
        return "TensorInfo(%s, ne=%s, %s, offset=%d)" % (self.name, list(self.ne), type_name(self.type), self.offset)


class _Cursor:
    def __init__(self, buf, path):
        self.buf, self.pos, self.path = buf, 0, path

    def take(self, n):
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError("%s: unexpected end of file at offset %d (need %d bytes)" % (self.path, self.pos, n))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        n = self.unpack("<Q")
        return bytes(self.take(n)).decode("utf-8", "surrogateescape")

    def value(self, vtype, depth=0):
        if vtype in _SCALAR:
            v = self.unpack(_SCALAR[vtype])
            if vtype == BOOL:
                if v > 1:
                    raise GGUFError("%s: bad bool value %d at offset %d" % (self.path, v, self.pos - 1))
                return bool(v)
            return v
        if vtype == STRING:
            return self.string()
        if vtype == ARRAY:
            if depth > 8:
                raise GGUFError("%s: arrays nested too deeply" % self.path)
            etype, n = self.unpack("<I"), self.unpack("<Q")
            if etype in _SCALAR and etype != BOOL:
                size = struct.calcsize(_SCALAR[etype])
                if n > (len(self.buf) - self.pos) // size:
                    raise GGUFError("%s: array of %d elements runs past the end of the file" % (self.path, n))
                return etype, np.frombuffer(self.take(n * size), _SCALAR[etype]).tolist()
            if n > len(self.buf) - self.pos:
                raise GGUFError("%s: array of %d elements runs past the end of the file" % (self.path, n))
            return etype, [self.value(etype, depth + 1) for _ in range(n)]
        raise GGUFError("%s: unknown metadata value type %d at offset %d" % (self.path, vtype, self.pos - 4))


def _plain(vtype, v):
    if vtype == ARRAY:
        etype, items = v
        return [_plain(etype, it) for it in items]
    return v


class GGUFFile:
    """Parsed GGUF file. fields: [(key, type, value)] in file order (ARRAY values as
    (element_type, items), the form write() takes); kv: {key: plain value};
    kv_types: {key: type}; tensors: {name: TensorInfo} in file order."""

    def __init__(self, path, buf, version, fields, tensors, alignment, data_offset):
        self.path, self.buf, self.version = path, buf, version
        self.fields, self.tensors = fields, tensors
        self.kv = {k: _plain(t, v) for k, t, v in fields}
        self.kv_types = {k: t for k, t, _ in fields}
        self.alignment, self.data_offset = alignment, data_offset

    def tensor_bytes(self, name):
        ti = self.tensors[name]
        start = self.data_offset + ti.offset
        return self.buf[start:start + ti.nbytes]

    def tensor(self, name):
        """Dequantized float32 array in PyTorch order (shape = reversed ne)."""
        ti = self.tensors[name]
        return dequantize(ti.type, self.tensor_bytes(name), ti.n_elements).reshape(ti.shape)


def parse(buf, path="<bytes>"):
    buf = memoryview(bytes(buf))
    c = _Cursor(buf, path)
    magic = bytes(c.take(4))
    if magic != b"GGUF":
        raise GGUFError("%s: bad magic %r (expected b'GGUF')" % (path, magic))
    version = c.unpack("<I")
    if version not in (2, 3):
        swapped = struct.unpack(">I", struct.pack("<I", version))[0]
        if swapped in (2, 3):
            raise GGUFError("%s: big-endian GGUF is not supported" % path)
        raise GGUFError("%s: unsupported GGUF version %d (2 and 3 are supported)" % (path, version))
    n_tensors, n_kv = c.unpack("<Q"), c.unpack("<Q")
    if n_tensors > len(buf) or n_kv > len(buf):
        raise GGUFError("%s: implausible counts (%d tensors, %d metadata entries)" % (path, n_tensors, n_kv))
    fields, seen = [], set()
    for _ in range(n_kv):
        key = c.string()
        if key in seen:
            raise GGUFError("%s: duplicate metadata key %s" % (path, key))
        seen.add(key)
        vtype = c.unpack("<I")
        fields.append((key, vtype, c.value(vtype)))
    alignment = DEFAULT_ALIGNMENT
    for key, vtype, v in fields:
        if key == "general.alignment":
            if vtype != UINT32:
                raise GGUFError("%s: general.alignment has type %s, expected u32"
                                % (path, VALUE_TYPE_NAMES.get(vtype, vtype)))
            if v == 0 or v & (v - 1):
                raise GGUFError("%s: general.alignment %d is not a power of two" % (path, v))
            alignment = v
    tensors = {}
    for _ in range(n_tensors):
        name = c.string()
        n_dims = c.unpack("<I")
        if not 1 <= n_dims <= MAX_DIMS:
            raise GGUFError("%s: tensor %s has %d dimensions (1..%d allowed)" % (path, name, n_dims, MAX_DIMS))
        ne = [c.unpack("<Q") for _ in range(n_dims)]
        gtype, offset = c.unpack("<I"), c.unpack("<Q")
        if name in tensors:
            raise GGUFError("%s: duplicate tensor %s" % (path, name))
        if gtype not in TYPE_INFO:
            raise GGUFError("%s: tensor %s has unknown ggml type %d" % (path, name, gtype))
        if ne[0] % TYPE_INFO[gtype][1]:
            raise GGUFError("%s: tensor %s: row length %d is not a multiple of the %s block size %d"
                            % (path, name, ne[0], type_name(gtype), TYPE_INFO[gtype][1]))
        if offset % alignment:
            raise GGUFError("%s: tensor %s: offset %d is not a multiple of the alignment %d"
                            % (path, name, offset, alignment))
        tensors[name] = TensorInfo(name, ne, gtype, offset)
    data_offset = c.pos + (-c.pos % alignment)
    data_size = len(buf) - data_offset
    spans = []
    for ti in tensors.values():
        if ti.offset + ti.nbytes > data_size:
            raise GGUFError("%s: tensor %s (%d bytes at data offset %d) runs past the end of the file"
                            % (path, ti.name, ti.nbytes, ti.offset))
        spans.append((ti.offset, ti.offset + ti.nbytes, ti.name))
    spans.sort()
    for (_, e0, n0), (s1, _, n1) in zip(spans, spans[1:]):
        if s1 < e0:
            raise GGUFError("%s: tensors %s and %s overlap" % (path, n0, n1))
    return GGUFFile(path, buf, version, fields, tensors, alignment, data_offset)


def read(path):
    with open(path, "rb") as f:
        return parse(f.read(), path)


def main(argv=None):
    """Print a GGUF file's metadata and tensor table (a debugging aid)."""
    import argparse
    ap = argparse.ArgumentParser(description="dump a GGUF file")
    ap.add_argument("file")
    args = ap.parse_args(argv)
    g = read(args.file)
    print("GGUF v%d, alignment %d, %d metadata entries, %d tensors, data at %d"
          % (g.version, g.alignment, len(g.fields), len(g.tensors), g.data_offset))
    for k, t, v in g.fields:
        pv = g.kv[k]
        if isinstance(pv, list) and len(pv) > 8:
            pv = "[%s, ... (%d items)]" % (", ".join(repr(x) for x in pv[:8]), len(pv))
        print("  %s: %s = %s" % (k, VALUE_TYPE_NAMES.get(t, t), pv))
    for ti in g.tensors.values():
        print("  %-28s %-5s ne=%s offset=%d bytes=%d"
              % (ti.name, type_name(ti.type), list(ti.ne), ti.offset, ti.nbytes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
