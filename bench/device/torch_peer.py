#!/usr/bin/env python3
"""PyTorch eager as the CUDA rows' peer (issue 11): the Qwen3-0.6B shape
(hidden 1024, 28 layers, 16 q / 8 kv heads of 128, FFN 3072, vocab 151936,
tied; q/k norms, RoPE) with random f16 weights on the GPU, a KV cache of 2048
positions; pp512 (one forward of 512 tokens) and tg128 (128 decode steps
after it), tok/s, best of REPS. Quantized files have no eager kernels: their
rows are held against the f16 model's time.

  python3 bench/device/torch_peer.py [PP] [TG] [REPS]

Prints one line per test; exits 0 with a message where torch or CUDA is
missing.
"""
import sys
import time

try:
    import torch
except ImportError:
    print("torch_peer: no torch here")
    sys.exit(0)
if not torch.cuda.is_available():
    print("torch_peer: torch without CUDA here")
    sys.exit(0)

PP, TG, REPS = (int(a) for a in (sys.argv[1:] + ["512", "128", "3"][len(sys.argv) - 1:])[:3])
H, L, NQ, NKV, HD, FFN, V, CTX, EPS = 1024, 28, 16, 8, 128, 3072, 151936, 2048, 1e-6
dev, dt = "cuda", torch.float16
g = torch.Generator(device=dev).manual_seed(0)


def rnd(*shape, std=0.02):
    return (torch.randn(*shape, generator=g, device=dev, dtype=torch.float32) * std).to(dt)


emb = rnd(V, H)
layers = [dict(n1=torch.ones(H, device=dev, dtype=dt), n2=torch.ones(H, device=dev, dtype=dt),
               qn=torch.ones(HD, device=dev, dtype=dt), kn=torch.ones(HD, device=dev, dtype=dt),
               q=rnd(NQ * HD, H), k=rnd(NKV * HD, H), v=rnd(NKV * HD, H), o=rnd(H, NQ * HD),
               gate=rnd(FFN, H), up=rnd(FFN, H), down=rnd(H, FFN)) for _ in range(L)]
norm = torch.ones(H, device=dev, dtype=dt)
inv = 1.0 / (1e6 ** (torch.arange(0, HD, 2, device=dev).float() / HD))
kc = torch.zeros(L, 1, NKV, CTX, HD, device=dev, dtype=dt)
vc = torch.zeros_like(kc)


def rms(x, w):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS)).to(dt) * w


def rope(x, pos):
    f = pos[:, None].float() * inv[None]
    cos, sin = torch.cat((f, f), -1).cos().to(dt), torch.cat((f, f), -1).sin().to(dt)
    x1, x2 = x[..., :HD // 2], x[..., HD // 2:]
    return x * cos + torch.cat((-x2, x1), -1) * sin


@torch.inference_mode()
def forward(ids, pos0):
    T = ids.shape[0]
    pos = torch.arange(pos0, pos0 + T, device=dev)
    x = emb[ids][None]
    for i, w in enumerate(layers):
        h = rms(x, w["n1"])
        q = rms((h @ w["q"].T).view(1, T, NQ, HD), w["qn"]).transpose(1, 2)
        k = rms((h @ w["k"].T).view(1, T, NKV, HD), w["kn"]).transpose(1, 2)
        v = (h @ w["v"].T).view(1, T, NKV, HD).transpose(1, 2)
        q, k = rope(q, pos), rope(k, pos)
        kc[i, :, :, pos0:pos0 + T] = k
        vc[i, :, :, pos0:pos0 + T] = v
        kk = kc[i, :, :, :pos0 + T].repeat_interleave(NQ // NKV, 1)
        vv = vc[i, :, :, :pos0 + T].repeat_interleave(NQ // NKV, 1)
        att = (q @ kk.transpose(-1, -2)).float() * HD ** -0.5
        if T > 1:  # causal: query i sees positions up to pos0 + i
            j = torch.arange(pos0 + T, device=dev)
            att = att.masked_fill(j[None, :] > pos[:, None], float("-inf"))
        o = torch.softmax(att, -1).to(dt) @ vv
        x = x + o.transpose(1, 2).reshape(1, T, NQ * HD) @ w["o"].T
        h = rms(x, w["n2"])
        x = x + (torch.nn.functional.silu(h @ w["gate"].T) * (h @ w["up"].T)) @ w["down"].T
    return (rms(x[:, -1], norm) @ emb.T).float()


ids = torch.randint(0, V, (PP,), device=dev, generator=g)
forward(ids, 0)  # warm up
best_pp = best_tg = 0.0
for _ in range(REPS):
    torch.cuda.synchronize()
    t = time.perf_counter()
    logits = forward(ids, 0)
    torch.cuda.synchronize()
    best_pp = max(best_pp, PP / (time.perf_counter() - t))
    tok = logits.argmax(-1)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for s in range(TG):
        tok = forward(tok.view(1), PP + s).argmax(-1)
    torch.cuda.synchronize()
    best_tg = max(best_tg, TG / (time.perf_counter() - t))
print("torch %s eager f16: pp%d %.1f tok/s, tg%d %.1f tok/s" % (torch.__version__, PP, best_pp,
                                                                 TG, best_tg))
