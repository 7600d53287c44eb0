"""Quantized weights stay quantized, and F16/BF16 ones 16-bit, at run time: the artifact's weights.bin is
no bigger than the GGUF's tensors (plus alignment and the F32 norms), it is
memory-mapped rather than copied, and after a run the resident part of it is
at most its size (`llmc bench` reports both from /proc/self/smaps).
bench/memory.py measures the same on a ~29 MB model, with peak RSS."""
import json
import math
import re
import sys

import pytest

import e2e_util
import make_gguf_model

MEM = re.compile(r"memory: weights.bin (\d+) bytes mapped, (-?\d+) KiB resident; peak RSS (-?\d+) KiB")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mtype", ["q4_k_m", "q4_0", "q8_0", "f16", "bf16"])
def test_quantized_weights_resident_within_file_size(llmc, tmp_path, mtype):
    gguf = tmp_path / "m.gguf"
    make_gguf_model.make_model(str(gguf), arch="llama", mtype=mtype, tied=False, seed=3)
    size = gguf.stat().st_size
    art = tmp_path / "art"
    e2e_util.run([llmc, "compile", gguf, "-o", art], check=True)
    out = e2e_util.run([llmc, "bench", art, "-r", "1", "-p", "8", "-n", "4"], check=True).stdout
    m = MEM.search(out)
    assert m, out
    mapped, resident = int(m.group(1)), int(m.group(2)) * 1024
    assert mapped == (art / "weights.bin").stat().st_size
    assert mapped <= 1.1 * size, (mapped, size)
    # A forward pass touches the weights (the embedding table only in the
    # rows it gathers); nothing beyond the file is resident, and nothing is
    # copied out of it (that would be anonymous memory, not this mapping).
    assert 0.5 * mapped <= resident <= mapped + 4096, (resident, mapped)


def arena_bytes(plans, tokens, pos0, n_out):
    """metadata.json's `arena` for one call: the largest plan (llmc/abi.h)."""
    sizes = {"tokens": tokens, "pos0": pos0, "n_out": n_out}
    best = 0
    for plan in plans:
        total = 0
        for term in plan:
            v = term["bytes"]
            for name in term["of"]:
                v *= sizes[name]
            total += v
        best = max(best, total)
    return best


def format_bytes(b):
    if b < 1024:
        return "%d B" % b
    if b < 1 << 20:
        return "%.1f KiB" % (b / 1024)
    if b < 1 << 30:
        return "%.1f MiB" % (b / (1 << 20))
    return "%.2f GiB" % (b / (1 << 30))


MEMORY_LINE = re.compile(r"^llmc: memory: KV cache (.+) \(f32\); activations (.+) per decode step "
                         r"at (\d+) positions, (.+) for a (\d+)-token prompt", re.M)


@pytest.mark.parametrize("act_quant", ["exact", "llama.cpp"])
def test_activations_live_in_one_planned_arena(llmc, tmp_path, act_quant):
    # tl-plan-arena: the compiled code allocates nothing (every intermediate
    # is a view of the caller's arena); `llmc compile` prints the KV cache and
    # the arena of a decode step and of a prompt, as metadata.json's `arena`
    # gives them; and the arena a prompt needs grows with it.
    gguf = tmp_path / "m.gguf"
    make_gguf_model.make_model(str(gguf), arch="qwen3", mtype="q8_0", tied=False, seed=5)
    art = tmp_path / "art"
    p = e2e_util.run([llmc, "compile", gguf, "--act-quant", act_quant, "--keep-ir", "-o", art],
                     check=True)
    lowered = (art / "lowered.mlir").read_text()
    assert "@malloc" not in lowered and "@free" not in lowered
    md = json.loads((art / "metadata.json").read_text())
    plans = md["arena"]["plans"]
    assert md["arena"]["alignment"] == 64 and len(plans) == 2, md["arena"]
    m = MEMORY_LINE.search(p.stderr)
    assert m, p.stderr
    kv_bytes = 4 * math.prod(md["kv_cache"]["shape"])
    max_seq = md["model"]["max_seq_len"]
    prompt = int(m.group(5))
    assert m.group(1) == format_bytes(kv_bytes)
    assert int(m.group(3)) == max_seq
    assert m.group(2) == format_bytes(arena_bytes(plans, 1, max_seq - 1, 1))
    assert m.group(4) == format_bytes(arena_bytes(plans, prompt, 0, 1))
    assert 0 < arena_bytes(plans, 1, 0, 1) < arena_bytes(plans, 4, 0, 1) < arena_bytes(plans, 8, 0, 1)
    # Every coefficient keeps the buffers 64-byte aligned.
    assert all(t["bytes"] % 64 == 0 for plan in plans for t in plan)
