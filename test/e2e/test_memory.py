"""Quantized weights stay quantized, and F16/BF16 ones 16-bit, at run time: the artifact's weights.bin is
no bigger than the GGUF's tensors (plus alignment and the F32 norms), it is
memory-mapped rather than copied, and after a run the resident part of it is
at most its size (`llmc bench` reports both from /proc/self/smaps).
bench/memory.py measures the same on a ~29 MB model, with peak RSS."""
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
