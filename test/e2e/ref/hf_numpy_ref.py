"""A second, independent numpy (float64) implementation of the HF Llama / Qwen2 /
Qwen3 forward, used only to cross-check hf_torch_ref.py (transformers is not
available). Deliberately structured differently: token-by-token decoding with a
KV cache, per-head loops, and RoPE written as explicit rotations of the
(x[j], x[j + hd/2]) pairs.
"""
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import safetensors_io  # noqa: E402


class NumpyHF:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            c = json.load(f)
        self.kind = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2",
                     "Qwen3ForCausalLM": "qwen3"}[c["architectures"][0]]
        self.c = c
        self.nh = c["num_attention_heads"]
        self.nkv = c["num_key_value_heads"]
        self.hd = c["head_dim"] if "head_dim" in c else c["hidden_size"] // self.nh
        self.eps = c["rms_norm_eps"]
        self.theta = c["rope_theta"]
        t = safetensors_io.load_checkpoint_dir(model_dir, upcast=True)
        self.t = {k: v.astype(np.float64) for k, v in t.items()}
        self.head = self.t["model.embed_tokens.weight"] if c["tie_word_embeddings"] else self.t["lm_head.weight"]
        self.reset()

    def reset(self):
        self.kc = [[] for _ in range(self.c["num_hidden_layers"])]
        self.vc = [[] for _ in range(self.c["num_hidden_layers"])]
        self.pos = 0

    def _norm(self, x, w):
        return w * (x / math.sqrt(float(np.dot(x, x)) / x.shape[0] + self.eps))

    def _rope(self, vec, pos):
        half = self.hd // 2
        out = vec.copy()
        for j in range(half):
            ang = pos / (self.theta ** (2.0 * j / self.hd))
            c, s = math.cos(ang), math.sin(ang)
            a, b = vec[j], vec[j + half]
            out[j] = a * c - b * s
            out[j + half] = b * c + a * s
        return out

    def step(self, token):
        t, hd, pos = self.t, self.hd, self.pos
        x = t["model.embed_tokens.weight"][token].copy()
        for l in range(self.c["num_hidden_layers"]):
            p = "model.layers.%d." % l
            h = self._norm(x, t[p + "input_layernorm.weight"])
            q = t[p + "self_attn.q_proj.weight"].dot(h)
            k = t[p + "self_attn.k_proj.weight"].dot(h)
            v = t[p + "self_attn.v_proj.weight"].dot(h)
            if self.kind == "qwen2":
                q = q + t[p + "self_attn.q_proj.bias"]
                k = k + t[p + "self_attn.k_proj.bias"]
                v = v + t[p + "self_attn.v_proj.bias"]
            qh = [q[i * hd:(i + 1) * hd] for i in range(self.nh)]
            kh = [k[i * hd:(i + 1) * hd] for i in range(self.nkv)]
            vh = [v[i * hd:(i + 1) * hd] for i in range(self.nkv)]
            if self.kind == "qwen3":
                qh = [self._norm(a, t[p + "self_attn.q_norm.weight"]) for a in qh]
                kh = [self._norm(a, t[p + "self_attn.k_norm.weight"]) for a in kh]
            qh = [self._rope(a, pos) for a in qh]
            kh = [self._rope(a, pos) for a in kh]
            self.kc[l].append(kh)
            self.vc[l].append(vh)
            group = self.nh // self.nkv
            outs = []
            for i in range(self.nh):
                g = i // group
                scores = np.array([np.dot(qh[i], self.kc[l][s][g]) for s in range(pos + 1)]) / math.sqrt(hd)
                scores = np.exp(scores - scores.max())
                scores /= scores.sum()
                outs.append(sum(scores[s] * self.vc[l][s][g] for s in range(pos + 1)))
            x = x + t[p + "self_attn.o_proj.weight"].dot(np.concatenate(outs))
            h = self._norm(x, t[p + "post_attention_layernorm.weight"])
            gte = t[p + "mlp.gate_proj.weight"].dot(h)
            up = t[p + "mlp.up_proj.weight"].dot(h)
            x = x + t[p + "mlp.down_proj.weight"].dot(gte / (1.0 + np.exp(-gte)) * up)
        x = self._norm(x, t["model.norm.weight"])
        self.pos += 1
        return self.head.dot(x)


def reference(model_dir, prompt_ids, steps):
    """Same contract as hf_torch_ref.reference, computed incrementally in float64."""
    m = NumpyHF(model_dir)
    rows = [m.step(tok) for tok in prompt_ids]
    prompt_logits = np.stack(rows)
    last = rows[-1]
    step_rows, ids = [], []
    for s in range(steps):
        step_rows.append(last)
        nxt = int(np.argmax(last))
        ids.append(nxt)
        if s + 1 < steps:
            last = m.step(nxt)
    return prompt_logits, np.stack(step_rows), ids
