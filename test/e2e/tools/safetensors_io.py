"""Plain-Python safetensors writer and reader (no `safetensors` package).

Format: 8-byte little-endian u64 header length N, then N bytes of UTF-8 JSON
{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
 "__metadata__": {str: str}} (offsets relative to the end of the header), then the
data. The header is padded with spaces to a multiple of 8 bytes, like the
reference implementation.

Supported element types: F32, F16, BF16 (numpy has no bfloat16: BF16 tensors are
written from float32 by round-to-nearest-even of the float32 bits and read back
as float32), plus F64, I64, I32, I16, I8, U8, BOOL (for tests of bad inputs).
"""
import json
import struct

import numpy as np

# dtype string -> (numpy dtype used for storage, element size)
_NP = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"), "I64": np.dtype("<i8"), "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"), "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_FROM_NP = {np.dtype(np.float64): "F64", np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
            np.dtype(np.int64): "I64", np.dtype(np.int32): "I32", np.dtype(np.int16): "I16",
            np.dtype(np.int8): "I8", np.dtype(np.uint8): "U8", np.dtype(np.bool_): "BOOL"}


def f32_to_bf16_bits(x):
    """float32 array -> uint16 bf16 bits, round-to-nearest-even (NaN stays NaN)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = ((bits[nan] >> 16) | 0x0040).astype(np.uint16)  # quiet NaN, keep sign
    return out


def bf16_bits_to_f32(u):
    u = np.ascontiguousarray(u, dtype=np.uint16)
    return (u.astype(np.uint32) << 16).view(np.float32)


def round_to_dtype(x, dtype):
    """The float32 values a float32 array has after storage as `dtype` (F32/F16/BF16)."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "F32":
        return x.copy()
    if dtype == "F16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "BF16":
        return bf16_bits_to_f32(f32_to_bf16_bits(x)).reshape(x.shape)
    raise ValueError("unsupported dtype %r" % dtype)


def _encode(value):
    """value: np.ndarray (dtype inferred) or (dtype_str, array-like). -> (dtype, shape, bytes)."""
    if isinstance(value, tuple):
        dtype, arr = value
        arr = np.asarray(arr)
        if dtype == "BF16":
            if arr.dtype == np.uint16:
                raw = arr
            else:
                raw = f32_to_bf16_bits(arr.astype(np.float32))
        elif dtype in _NP:
            raw = arr.astype(_NP[dtype])
        else:
            raise ValueError("unsupported dtype %r" % dtype)
    else:
        arr = np.asarray(value)
        if arr.dtype not in _FROM_NP:
            raise ValueError("cannot infer safetensors dtype for numpy %s" % arr.dtype)
        dtype = _FROM_NP[arr.dtype]
        raw = arr.astype(_NP[dtype])
    raw = np.ascontiguousarray(raw)
    return dtype, list(arr.shape), raw.tobytes()


def build_header(entries, metadata=None):
    header = {}
    if metadata is not None:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    header.update(entries)
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * (-len(hb) % 8)
    return hb


def save_file(tensors, path, metadata=None):
    """tensors: {name: np.ndarray | (dtype_str, array)} in the order to write them.
    Returns the number of data bytes written."""
    entries, blobs, off = {}, [], 0
    for name, value in tensors.items():
        dtype, shape, data = _encode(value)
        entries[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    hb = build_header(entries, metadata)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)
    return off


def read_header(path):
    """-> (header dict without __metadata__, metadata dict or None, data start offset)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise ValueError("%s: too small for a safetensors header" % path)
        n, = struct.unpack("<Q", raw)
        hb = f.read(n)
        if len(hb) != n:
            raise ValueError("%s: header length %d exceeds the file" % (path, n))
    header = json.loads(hb.decode("utf-8"))
    meta = header.pop("__metadata__", None)
    return header, meta, 8 + n


def load_file(path, upcast=True):
    """-> ({name: np.ndarray}, metadata). With upcast, F16/BF16 come back as float32;
    otherwise F16 as float16 and BF16 as uint16 bits."""
    header, meta, start = read_header(path)
    with open(path, "rb") as f:
        data = f.read()
    body = len(data) - start
    out = {}
    for name, info in header.items():
        dtype, shape = info["dtype"], [int(s) for s in info["shape"]]
        b, e = info["data_offsets"]
        if dtype not in _NP:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, dtype))
        npd = _NP[dtype]
        count = int(np.prod(shape)) if shape else 1
        if not (0 <= b <= e <= body) or e - b != count * npd.itemsize:
            raise ValueError("%s: tensor %s has bad data_offsets %r" % (path, name, [b, e]))
        arr = np.frombuffer(data, dtype=npd, count=count, offset=start + b).reshape(shape)
        if dtype == "BF16" and upcast:
            arr = bf16_bits_to_f32(arr).reshape(shape)
        elif dtype == "F16" and upcast:
            arr = arr.astype(np.float32)
        else:
            arr = arr.copy()
        out[name] = arr
    return out, meta


def load_checkpoint_dir(model_dir, upcast=True):
    """All tensors of an HF model dir: model.safetensors or the shards listed in
    model.safetensors.index.json. -> {name: np.ndarray}"""
    import os
    index = os.path.join(model_dir, "model.safetensors.index.json")
    single = os.path.join(model_dir, "model.safetensors")
    tensors = {}
    if os.path.exists(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        for fname in sorted(set(wm.values())):
            part, _ = load_file(os.path.join(model_dir, fname), upcast)
            tensors.update(part)
        missing = set(wm) - set(tensors)
        if missing:
            raise ValueError("%s: tensors missing from shards: %s" % (index, sorted(missing)))
    else:
        tensors, _ = load_file(single, upcast)
    return tensors
