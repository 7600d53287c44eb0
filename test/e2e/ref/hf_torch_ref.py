#!/usr/bin/env python3
"""Independent float32 PyTorch reference of Hugging Face LlamaForCausalLM,
Qwen2ForCausalLM and Qwen3ForCausalLM (forward semantics of transformers'
modeling_llama / modeling_qwen2 / modeling_qwen3, eager attention, no cache).

  hf_torch_ref.py --model DIR --prompt-ids 1,2,3 --steps 16 \
      --out-prompt-logits P.npy --out-step-logits S.npy --out-ids I.txt

P.npy: float32 [n_prompt, vocab], the logits at every prompt position.
S.npy: float32 [steps, vocab]; row 0 = logits at the last prompt position, row k =
       logits at the position of the k-th generated token (full recompute).
I.txt: the `steps` greedily generated ids (argmax, first maximum), space separated.
No stopping at EOS: exactly `steps` tokens are generated.
f16/bf16 checkpoints are upcast to float32 on load; all math is float32.
--kv-dtype f16 rounds the keys (after RoPE) and values to float16 before
attention reads them, as a KV cache of f16 holds them.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import safetensors_io  # noqa: E402

torch.set_num_threads(1)

SUPPORTED = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3"}


def rms_norm(x, w, eps):
    x = x.to(torch.float32)
    var = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(var + eps)
    return w * x


def rotate_half(x):
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


def repeat_kv(x, n_rep):
    # [B, n_kv, T, hd] -> [B, n_kv * n_rep, T, hd]
    if n_rep == 1:
        return x
    b, nkv, t, hd = x.shape
    return x[:, :, None, :, :].expand(b, nkv, n_rep, t, hd).reshape(b, nkv * n_rep, t, hd)


class HFCausalLM:
    def __init__(self, model_dir, kv_dtype="f32"):
        if kv_dtype not in ("f32", "f16"):
            raise ValueError("kv_dtype must be f32 or f16, got %r" % kv_dtype)
        self.kv_dtype = kv_dtype
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        self.cfg = cfg
        archs = cfg.get("architectures") or []
        if not archs or archs[0] not in SUPPORTED:
            raise ValueError("%s: unsupported architectures %r" % (model_dir, archs))
        self.arch = SUPPORTED[archs[0]]
        self.hidden = cfg["hidden_size"]
        self.n_layers = cfg["num_hidden_layers"]
        self.n_heads = cfg["num_attention_heads"]
        self.n_kv = cfg.get("num_key_value_heads") or self.n_heads
        self.head_dim = cfg.get("head_dim") or self.hidden // self.n_heads
        self.vocab = cfg["vocab_size"]
        self.eps = float(cfg["rms_norm_eps"])
        self.theta = float(cfg.get("rope_theta", 10000.0))
        if cfg.get("rope_scaling"):
            raise ValueError("rope_scaling is not supported by this reference")
        if cfg.get("hidden_act", "silu") != "silu":
            raise ValueError("hidden_act %r not supported" % cfg.get("hidden_act"))
        self.tied = bool(cfg.get("tie_word_embeddings", False))
        if self.arch == "qwen2":
            self.qkv_bias, self.o_bias = True, False
        else:
            ab = bool(cfg.get("attention_bias", False))
            self.qkv_bias, self.o_bias = ab, ab
        self.mlp_bias = bool(cfg.get("mlp_bias", False)) if self.arch == "llama" else False
        raw = safetensors_io.load_checkpoint_dir(model_dir, upcast=True)
        self.w = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in raw.items()}
        self._validate(model_dir)
        self.lm_head = self.w["model.embed_tokens.weight"] if self.tied else self.w["lm_head.weight"]
        # rotary (LlamaRotaryEmbedding default rope type)
        hd = self.head_dim
        self.inv_freq = 1.0 / (self.theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))

    def expected_shapes(self):
        H, I, V, hd = self.hidden, self.cfg["intermediate_size"], self.vocab, self.head_dim
        nq, nkv = self.n_heads * hd, self.n_kv * hd
        e = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,)}
        if not self.tied:
            e["lm_head.weight"] = (V, H)
        for i in range(self.n_layers):
            p = "model.layers.%d." % i
            e.update({p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
                      p + "self_attn.q_proj.weight": (nq, H), p + "self_attn.k_proj.weight": (nkv, H),
                      p + "self_attn.v_proj.weight": (nkv, H), p + "self_attn.o_proj.weight": (H, nq),
                      p + "mlp.gate_proj.weight": (I, H), p + "mlp.up_proj.weight": (I, H),
                      p + "mlp.down_proj.weight": (H, I)})
            if self.qkv_bias:
                e.update({p + "self_attn.q_proj.bias": (nq,), p + "self_attn.k_proj.bias": (nkv,),
                          p + "self_attn.v_proj.bias": (nkv,)})
            if self.o_bias:
                e[p + "self_attn.o_proj.bias"] = (H,)
            if self.mlp_bias:
                e.update({p + "mlp.gate_proj.bias": (I,), p + "mlp.up_proj.bias": (I,),
                          p + "mlp.down_proj.bias": (H,)})
            if self.arch == "qwen3":
                e.update({p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,)})
        return e

    def _validate(self, model_dir):
        for name, shape in self.expected_shapes().items():
            if name not in self.w:
                raise ValueError("%s: missing tensor %s" % (model_dir, name))
            if tuple(self.w[name].shape) != shape:
                raise ValueError("%s: tensor %s has shape %s, expected %s"
                                 % (model_dir, name, list(self.w[name].shape), list(shape)))

    def _lin(self, x, name, bias):
        y = x @ self.w[name + ".weight"].T
        if bias:
            y = y + self.w[name + ".bias"]
        return y

    def forward(self, ids):
        """ids: list of int -> float32 logits [len(ids), vocab] (causal)."""
        w = self.w
        T = len(ids)
        hd, nh, nkv = self.head_dim, self.n_heads, self.n_kv
        x = w["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.long)][None]  # [1,T,H]
        pos = torch.arange(T, dtype=torch.int64)
        freqs = pos[:, None].float() * self.inv_freq[None, :].float()  # [T, hd/2]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]  # [1,1,T,hd]
        mask = torch.full((T, T), torch.finfo(torch.float32).min).triu(1)
        scaling = hd ** -0.5
        for i in range(self.n_layers):
            p = "model.layers.%d." % i
            res = x
            h = rms_norm(x, w[p + "input_layernorm.weight"], self.eps)
            q = self._lin(h, p + "self_attn.q_proj", self.qkv_bias).view(1, T, nh, hd)
            k = self._lin(h, p + "self_attn.k_proj", self.qkv_bias).view(1, T, nkv, hd)
            v = self._lin(h, p + "self_attn.v_proj", self.qkv_bias).view(1, T, nkv, hd)
            if self.arch == "qwen3":
                q = rms_norm(q, w[p + "self_attn.q_norm.weight"], self.eps)
                k = rms_norm(k, w[p + "self_attn.k_norm.weight"], self.eps)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [1,heads,T,hd]
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if self.kv_dtype == "f16":
                k, v = k.half().float(), v.half().float()
            k = repeat_kv(k, nh // nkv)
            v = repeat_kv(v, nh // nkv)
            att = torch.matmul(q, k.transpose(2, 3)) * scaling + mask
            att = torch.softmax(att, dim=-1, dtype=torch.float32)
            o = torch.matmul(att, v).transpose(1, 2).reshape(1, T, nh * hd)
            x = res + self._lin(o, p + "self_attn.o_proj", self.o_bias)
            res = x
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], self.eps)
            g = self._lin(h, p + "mlp.gate_proj", self.mlp_bias)
            u = self._lin(h, p + "mlp.up_proj", self.mlp_bias)
            x = res + self._lin(torch.nn.functional.silu(g) * u, p + "mlp.down_proj", self.mlp_bias)
        x = rms_norm(x, w["model.norm.weight"], self.eps)
        return (x @ self.lm_head.T)[0].float()


def reference(model_dir, prompt_ids, steps, kv_dtype="f32"):
    """-> (prompt_logits [n, V], step_logits [steps, V], generated ids list)."""
    m = HFCausalLM(model_dir, kv_dtype)
    with torch.no_grad():
        seq = list(prompt_ids)
        logits = m.forward(seq)
        prompt_logits = logits.numpy().copy()
        step_rows, ids = [], []
        last = logits[-1]
        for s in range(steps):
            step_rows.append(last.numpy().copy())
            nxt = int(torch.argmax(last))
            ids.append(nxt)
            seq.append(nxt)
            if s + 1 < steps:
                last = m.forward(seq)[-1]
    step_logits = np.stack(step_rows).astype(np.float32) if step_rows else \
        np.zeros((0, m.vocab), np.float32)
    return prompt_logits.astype(np.float32), step_logits, ids


def write_outputs(args, prompt_logits, step_logits, ids):
    """Saves what the CLI flags ask for (--out-prompt-logits, --out-step-logits,
    --out-ids; ids go to stdout without the last). Returns the exit code."""
    if args.out_prompt_logits:
        np.save(args.out_prompt_logits, prompt_logits)
    if args.out_step_logits:
        np.save(args.out_step_logits, step_logits)
    line = " ".join(str(i) for i in ids)
    if args.out_ids:
        with open(args.out_ids, "w") as f:
            f.write(line + "\n")
    else:
        print(line)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True, help="comma separated token ids")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--out-prompt-logits")
    ap.add_argument("--out-step-logits")
    ap.add_argument("--out-ids")
    ap.add_argument("--kv-dtype", choices=["f32", "f16"], default="f32")
    args = ap.parse_args(argv)
    prompt = [int(s) for s in args.prompt_ids.replace(" ", "").split(",") if s]
    if not prompt:
        ap.error("empty --prompt-ids")
    pl, sl, ids = reference(args.model, prompt, args.steps, args.kv_dtype)
    return write_outputs(args, pl, sl, ids)


if __name__ == "__main__":
    sys.exit(main())
