#!/usr/bin/env python3
"""Real vocabularies as GGUF tokenizer metadata, converted the way llama.cpp's
convert_hf_to_gguf.py does (independently of llmc's own converter):

  read_sentencepiece(path)   SentencePiece tokenizer.model (protobuf read here,
                             no protobuf package) -> vocab dict, "llama" kind
  read_hf(path)              Hugging Face tokenizer.json (+ tokenizer_config.json
                             beside it) -> vocab dict, "gpt2" kind
  gguf_fields(vocab, ...)    -> [(key, gguf value type, value)] for gguf_io.write

A vocab dict holds: model ("llama"/"gpt2"), tokens, types (llama.cpp token types),
scores (llama), merges (gpt2), bos, eos, unk, pad (None when absent), add_bos.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io as G  # noqa: E402

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def _varint(data, pos):
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, pos


def _fields(data):
    """[(field number, wire type, value)] of one protobuf message."""
    pos, out = 0, []
    while pos < len(data):
        key, pos = _varint(data, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = _varint(data, pos)
        elif wire == 1:
            v, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(data, pos)
            v, pos = data[pos:pos + n], pos + n
        elif wire == 5:
            v, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        out.append((num, wire, v))
    return out


def _int32(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def read_sentencepiece(path):
    """Pieces, scores and types of a SentencePiece model (sentencepiece_model.proto:
    ModelProto.pieces = 1 {piece = 1, score = 2, type = 3}; trainer_spec = 2
    {unk_id = 40, bos_id = 41, eos_id = 42, pad_id = 43})."""
    with open(path, "rb") as f:
        data = f.read()
    tokens, scores, types = [], [], []
    ids = {"unk": 0, "bos": 1, "eos": 2, "pad": -1}
    for num, wire, v in _fields(data):
        if num == 1 and wire == 2:
            piece, score, ptype = "", 0.0, NORMAL
            for n2, w2, v2 in _fields(v):
                if n2 == 1:
                    piece = v2.decode("utf-8")
                elif n2 == 2 and w2 == 5:
                    score = struct.unpack("<f", v2)[0]
                elif n2 == 3:
                    ptype = v2
            tokens.append(piece)
            scores.append(score)
            types.append(ptype)
        elif num == 2 and wire == 2:
            for n2, w2, v2 in _fields(v):
                for name, field in (("unk", 40), ("bos", 41), ("eos", 42), ("pad", 43)):
                    if n2 == field and w2 == 0:
                        ids[name] = _int32(v2)
    none = lambda i: None if i < 0 else i  # noqa: E731
    return dict(model="llama", tokens=tokens, scores=scores, types=types, merges=None,
                bos=none(ids["bos"]), eos=none(ids["eos"]), unk=none(ids["unk"]),
                pad=none(ids["pad"]), add_bos=True, pre="default")


def _looks_special(text):
    # convert_hf_to_gguf.py's does_token_look_special()
    return (text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
            or (text.startswith("<unused") and text.endswith(">")))


def read_hf(path, pre="qwen2"):
    """A byte-level BPE tokenizer.json: added tokens become CONTROL when special (or
    looking special), else USER_DEFINED; BOS/EOS/PAD from tokenizer_config.json."""
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    vocab = dict(tj["model"]["vocab"])
    added = {t["id"]: t for t in tj.get("added_tokens", [])}
    n = max(max(vocab.values()), max(added) if added else -1) + 1
    tokens, types = [None] * n, [NORMAL] * n
    for text, i in vocab.items():
        tokens[i] = text
    for i, t in added.items():
        tokens[i] = t["content"]
        types[i] = CONTROL if t.get("special") or _looks_special(t["content"]) else USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    cfg_path = os.path.join(os.path.dirname(path), "tokenizer_config.json")
    cfg = {}
    if os.path.exists(cfg_path):
        with open(cfg_path, encoding="utf-8") as f:
            cfg = json.load(f)

    def token_id(v):
        if isinstance(v, dict):
            v = v.get("content")
        return tokens.index(v) if isinstance(v, str) and v in tokens else None
    pad = token_id(cfg.get("pad_token"))
    # Qwen's GGUFs carry <|endoftext|> (the pad token) as BOS although none is added.
    bos = token_id(cfg.get("bos_token"))
    bos = pad if bos is None else bos
    return dict(model="gpt2", tokens=tokens, scores=None, types=types, merges=merges,
                bos=bos, eos=token_id(cfg.get("eos_token")), unk=None, pad=pad,
                add_bos=bool(cfg.get("add_bos_token", False)), pre=pre)


def gguf_fields(vocab, n_vocab=None, pre=None, add_bos=None, add_eos=None, merges=True,
                extra=()):
    """tokenizer.ggml.* metadata; the vocabulary is padded with "[PAD<i>]" UNUSED tokens
    to n_vocab (convert_hf_to_gguf.py does so up to the model's vocab_size).
    merges=False leaves the merges out (a broken file); `extra` is appended."""
    tokens, types = list(vocab["tokens"]), list(vocab["types"])
    scores = list(vocab["scores"]) if vocab["scores"] is not None else None
    for i in range(len(tokens), n_vocab or len(tokens)):
        tokens.append("[PAD%d]" % i)
        types.append(UNUSED)
        if scores is not None:
            scores.append(0.0)
    f = [("tokenizer.ggml.model", G.STRING, vocab["model"]),
         ("tokenizer.ggml.pre", G.STRING, pre or vocab["pre"]),
         ("tokenizer.ggml.tokens", G.ARRAY, (G.STRING, tokens))]
    if scores is not None:
        f.append(("tokenizer.ggml.scores", G.ARRAY, (G.FLOAT32, scores)))
    f.append(("tokenizer.ggml.token_type", G.ARRAY, (G.INT32, types)))
    if vocab["merges"] is not None and merges:
        f.append(("tokenizer.ggml.merges", G.ARRAY, (G.STRING, vocab["merges"])))
    for key, name in (("bos_token_id", "bos"), ("eos_token_id", "eos"),
                      ("unknown_token_id", "unk"), ("padding_token_id", "pad")):
        if vocab[name] is not None:
            f.append(("tokenizer.ggml." + key, G.UINT32, vocab[name]))
    f.append(("tokenizer.ggml.add_bos_token", G.BOOL,
              vocab["add_bos"] if add_bos is None else add_bos))
    f.append(("tokenizer.ggml.add_eos_token", G.BOOL, bool(add_eos)))
    return f + list(extra)
