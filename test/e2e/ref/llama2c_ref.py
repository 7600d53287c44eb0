#!/usr/bin/env python3
"""Independent numpy reference of karpathy/llama2.c (run.c semantics).

Model: float32 throughout, RMSNorm eps 1e-5, interleaved-pair RoPE with
freq = 1/10000^(i/head_size) for even i, GQA, causal softmax, SwiGLU FFN
w2(silu(w1 x) * w3 x), classifier tied to the embedding iff vocab_size > 0.
Tokenizer: llama2.c encode (BOS, dummy-prefix space, UTF-8 code points, byte
fallback id = byte + 3, merge the highest-scoring pair first, leftmost on ties)
and decode (strip the leading space of a piece following BOS, `<0xNN>` pieces
are raw bytes).

CLI:
  llama2c_ref.py --checkpoint F --tokenizer T --steps N --prompt TEXT [--text]
prints the greedy ids of the generated tokens (the prompt excluded) on one line,
space separated; with --text, the decoded generated text instead. `--steps` is
the number of tokens to generate (not counting the prompt). Generation stops
(without emitting the stop token) at BOS (1), like llama2.c, and also at EOS (2),
and when the context (seq_len) is full.
"""
import argparse
import re
import struct
import sys

import numpy as np

F32 = np.float32
BOS_ID = 1
EOS_ID = 2


class CheckpointError(ValueError):
    pass


class Config:
    FIELDS = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")

    def __init__(self, values):
        for k, v in zip(self.FIELDS, values):
            setattr(self, k, int(v))
        self.shared_weights = self.vocab_size > 0
        self.vocab_size = abs(self.vocab_size)

    @property
    def head_size(self):
        return self.dim // self.n_heads

    @property
    def kv_dim(self):
        return self.dim * self.n_kv_heads // self.n_heads

    def __repr__(self):
        return "Config(%s, shared=%s)" % (
            ", ".join("%s=%d" % (k, getattr(self, k)) for k in self.FIELDS), self.shared_weights)


def load_checkpoint(path):
    """Returns (Config, dict of float32 weight arrays) for a llama2.c .bin file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 28:
        raise CheckpointError("%s: file too small for a llama2.c header" % path)
    cfg = Config(struct.unpack_from("<7i", data, 0))
    c = cfg
    if (c.dim <= 0 or c.hidden_dim <= 0 or c.n_layers <= 0 or c.n_heads <= 0 or c.n_kv_heads <= 0
            or c.vocab_size <= 0 or c.seq_len <= 0 or c.dim % c.n_heads
            or c.n_heads % c.n_kv_heads or c.head_size % 2):
        raise CheckpointError("%s: invalid header %r" % (path, cfg))
    hs, kv, L = c.head_size, c.kv_dim, c.n_layers
    layout = [
        ("token_embedding", (c.vocab_size, c.dim)),
        ("rms_att", (L, c.dim)),
        ("wq", (L, c.dim, c.dim)),
        ("wk", (L, kv, c.dim)),
        ("wv", (L, kv, c.dim)),
        ("wo", (L, c.dim, c.dim)),
        ("rms_ffn", (L, c.dim)),
        ("w1", (L, c.hidden_dim, c.dim)),
        ("w2", (L, c.dim, c.hidden_dim)),
        ("w3", (L, c.hidden_dim, c.dim)),
        ("rms_final", (c.dim,)),
        ("freq_cis_real", (c.seq_len, hs // 2)),
        ("freq_cis_imag", (c.seq_len, hs // 2)),
    ]
    if not c.shared_weights:
        layout.append(("wcls", (c.vocab_size, c.dim)))
    off = 28
    w = {}
    for name, shape in layout:
        n = int(np.prod(shape))
        if off + 4 * n > len(data):
            raise CheckpointError("%s: truncated (tensor %s needs bytes %d..%d, file has %d)"
                                  % (path, name, off, off + 4 * n, len(data)))
        w[name] = np.frombuffer(data, dtype="<f4", count=n, offset=off).reshape(shape).astype(F32)
        off += 4 * n
    if c.shared_weights:
        w["wcls"] = w["token_embedding"]
    return cfg, w


def rmsnorm(x, weight):
    ss = np.sum(x * x, dtype=F32) / F32(x.shape[0])
    ss = ss + F32(1e-5)
    ss = F32(1.0) / np.sqrt(ss)
    return (weight * (ss * x)).astype(F32)


def softmax(x):
    m = np.max(x)
    e = np.exp(x - m).astype(F32)
    return (e / np.sum(e, dtype=F32)).astype(F32)


class Transformer:
    def __init__(self, cfg, weights):
        self.cfg = cfg
        self.w = weights
        c = cfg
        self.key_cache = np.zeros((c.n_layers, c.seq_len, c.kv_dim), F32)
        self.value_cache = np.zeros((c.n_layers, c.seq_len, c.kv_dim), F32)
        # RoPE tables as run.c computes them (float math): for even i in [0, dim),
        # head_dim = i % head_size; freq = 1 / powf(10000, head_dim / head_size).
        hs = c.head_size
        hd = (np.arange(0, c.dim, 2) % hs).astype(F32)
        self.freq = (F32(1.0) / np.power(F32(10000.0), hd / F32(hs))).astype(F32)

    @classmethod
    def from_file(cls, path):
        return cls(*load_checkpoint(path))

    def reset(self):
        self.key_cache[:] = 0
        self.value_cache[:] = 0

    def forward(self, token, pos):
        c, w = self.cfg, self.w
        hs, kv_dim = c.head_size, c.kv_dim
        kv_mul = c.n_heads // c.n_kv_heads
        x = w["token_embedding"][token].copy()
        val = (F32(pos) * self.freq).astype(F32)
        fcr, fci = np.cos(val).astype(F32), np.sin(val).astype(F32)
        n_kv_pairs = kv_dim // 2
        for l in range(c.n_layers):
            xb = rmsnorm(x, w["rms_att"][l])
            q = (w["wq"][l] @ xb).astype(F32)
            k = (w["wk"][l] @ xb).astype(F32)
            v = (w["wv"][l] @ xb).astype(F32)
            # interleaved-pair rotation; k only over its kv_dim
            q0, q1 = q[0::2].copy(), q[1::2].copy()
            q[0::2] = q0 * fcr - q1 * fci
            q[1::2] = q0 * fci + q1 * fcr
            k0, k1 = k[0::2].copy(), k[1::2].copy()
            k[0::2] = k0 * fcr[:n_kv_pairs] - k1 * fci[:n_kv_pairs]
            k[1::2] = k0 * fci[:n_kv_pairs] + k1 * fcr[:n_kv_pairs]
            self.key_cache[l, pos] = k
            self.value_cache[l, pos] = v
            out = np.zeros(c.dim, F32)
            scale = np.sqrt(F32(hs))
            for h in range(c.n_heads):
                qh = q[h * hs:(h + 1) * hs]
                kvh = h // kv_mul
                K = self.key_cache[l, :pos + 1, kvh * hs:(kvh + 1) * hs]
                V = self.value_cache[l, :pos + 1, kvh * hs:(kvh + 1) * hs]
                att = ((K @ qh).astype(F32) / scale).astype(F32)
                att = softmax(att)
                out[h * hs:(h + 1) * hs] = (att @ V).astype(F32)
            x = (x + (w["wo"][l] @ out).astype(F32)).astype(F32)
            xb = rmsnorm(x, w["rms_ffn"][l])
            hb = (w["w1"][l] @ xb).astype(F32)
            hb2 = (w["w3"][l] @ xb).astype(F32)
            hb = (hb * (F32(1.0) / (F32(1.0) + np.exp(-hb)))).astype(F32)
            hb = (hb * hb2).astype(F32)
            x = (x + (w["w2"][l] @ hb).astype(F32)).astype(F32)
        x = rmsnorm(x, w["rms_final"])
        return (w["wcls"] @ x).astype(F32)


class Tokenizer:
    def __init__(self, path, vocab_size=None):
        with open(path, "rb") as f:
            data = f.read()
        self.max_token_length, = struct.unpack_from("<i", data, 0)
        off = 4
        self.vocab, self.scores = [], []
        while off < len(data) and (vocab_size is None or len(self.vocab) < vocab_size):
            score, n = struct.unpack_from("<fi", data, off)
            off += 8
            self.vocab.append(data[off:off + n])
            self.scores.append(score)
            off += n
        if vocab_size is not None and len(self.vocab) != vocab_size:
            raise ValueError("%s: %d tokens, expected %d" % (path, len(self.vocab), vocab_size))
        self.lookup = {}
        for i, piece in enumerate(self.vocab):
            self.lookup.setdefault(piece, i)

    def encode(self, text, bos=True, eos=False):
        if isinstance(text, str):
            text = text.encode("utf-8")
        tokens = []
        if bos:
            tokens.append(BOS_ID)
        if len(text) > 0:
            tokens.append(self.lookup.get(b" ", -1))  # dummy prefix (run.c pushes -1 if absent)
        # split into UTF-8 code points (at most 4 bytes each), as run.c does
        i = 0
        while i < len(text):
            j = i + 1
            while j < len(text) and (text[j] & 0xC0) == 0x80 and j - i < 4:
                j += 1
            cp = text[i:j]
            tid = self.lookup.get(cp)
            if tid is not None:
                tokens.append(tid)
            else:
                tokens.extend(b + 3 for b in cp)
            i = j
        while True:
            best_score, best_id, best_idx = -1e10, -1, -1
            for i in range(len(tokens) - 1):
                tid = self.lookup.get(self.vocab[tokens[i]] + self.vocab[tokens[i + 1]])
                if tid is not None and self.scores[tid] > best_score:
                    best_score, best_id, best_idx = self.scores[tid], tid, i
            if best_idx == -1:
                break
            tokens[best_idx:best_idx + 2] = [best_id]
        if eos:
            tokens.append(EOS_ID)
        return tokens

    _BYTE_RE = re.compile(rb"^<0x([0-9A-Fa-f]{2})>")

    def decode(self, prev_token, token):
        """Bytes of one piece, as run.c's decode() returns them."""
        piece = self.vocab[token]
        if prev_token == BOS_ID and piece[:1] == b" ":
            piece = piece[1:]
        m = self._BYTE_RE.match(piece)
        if m:
            piece = bytes([int(m.group(1), 16)])
        return piece

    @staticmethod
    def safe_piece(piece):
        """run.c safe_printf: drop single non-printable, non-whitespace bytes."""
        if not piece:
            return b""
        if len(piece) == 1:
            b = piece[0]
            printable = 0x20 <= b <= 0x7E
            space = b in (0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D)
            if not (printable or space):
                return b""
        return piece

    def decode_ids(self, prev_token, ids, safe=True):
        """Concatenated pieces; with safe, filtered like run.c's safe_printf (which drops
        lone bytes that are not printable ASCII or whitespace, e.g. UTF-8 byte tokens)."""
        out = []
        for t in ids:
            piece = self.decode(prev_token, t)
            out.append(self.safe_piece(piece) if safe else piece)
            prev_token = t
        return b"".join(out)


def generate(model, prompt_tokens, steps, stop_ids=(BOS_ID, EOS_ID)):
    """Greedy generation; returns the generated ids (prompt excluded, stop token excluded)."""
    if not prompt_tokens:
        raise ValueError("need at least one prompt token")
    model.reset()
    seq_len = model.cfg.seq_len
    out = []
    pos = 0
    token = prompt_tokens[0]
    while pos < seq_len:
        logits = model.forward(token, pos)
        pos += 1
        if pos < len(prompt_tokens):
            token = prompt_tokens[pos]
            continue
        nxt = int(np.argmax(logits))  # first maximum, as llama2.c's sample_argmax
        if nxt in stop_ids:
            break
        out.append(nxt)
        if len(out) >= steps:
            break
        token = nxt
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--steps", type=int, default=256, help="number of tokens to generate")
    ap.add_argument("--prompt", default="")
    ap.add_argument("--text", action="store_true", help="print decoded text instead of ids")
    args = ap.parse_args(argv)
    model = Transformer.from_file(args.checkpoint)
    tok = Tokenizer(args.tokenizer, model.cfg.vocab_size)
    prompt = tok.encode(args.prompt, bos=True, eos=False)
    ids = generate(model, prompt, args.steps)
    if args.text:
        sys.stdout.buffer.write(tok.decode_ids(prompt[-1], ids) + b"\n")
    else:
        print(" ".join(str(i) for i in ids))
    return 0


if __name__ == "__main__":
    sys.exit(main())
