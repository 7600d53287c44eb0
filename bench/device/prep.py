#!/usr/bin/env python3
"""Prepares a GPU machine's check (bench/device/run.sh for Vulkan, run_cuda.sh
for CUDA): the test suite's tiny GGUF models compiled for the device's target
into DEV/art/tiny-*, stories260K into DEV/art/s260 with the CPU target's 100
greedy ids in DEV/s260.ref, and the CPU target's reference logits and greedy
ids in REF (compare.py reads them).

  bench/device/prep.py TARGET [DEV] [REF]

TARGET: the device's `llmc devices` description (e.g. vulkan:1.3,+fp64,
subgroup=32,workgroup=1024,shared=48K,range=2G for an H200's Vulkan driver,
cuda:sm_90 for its CUDA driver); DEV: default
.dev (git-ignored: `echo /.dev/ >> .git/info/exclude`), carried to the
machine; REF: default /tmp/llmc-device-ref. The bench artifacts (bench-*,
prof-*: the kernels and metadata.json, no weights) come from prep_bench.sh.
"""
import os, sys, json, pathlib, subprocess, shutil
import numpy as np
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
E2E = os.path.join(ROOT, "test", "e2e")
sys.path.insert(0, E2E); sys.path.insert(0, E2E + "/tools")
import e2e_util, gguf_writer, make_hf_model
LLMC = os.environ.get("LLMC", os.path.join(ROOT, "build", "bin", "llmc"))
T = sys.argv[1]
art = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, ".dev")) / "art"
root = pathlib.Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp/llmc-device-ref")
root.mkdir(parents=True, exist_ok=True); art.mkdir(parents=True, exist_ok=True)
# 45 tokens: a whole tile of a prompt product on a GPU's matrix units (32)
# and a tail.
ids = e2e_util.deterministic_prompt_ids(45, 300)
ref = {}
def comp(model, out, target):
    subprocess.check_call([LLMC, "compile", str(model), "--target", target, "-o", str(out)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
cases = []
for arch, tied, dtype in [("llama", False, "f32"), ("qwen3", True, "f16")]:
    d = root / ("%s-%s" % (arch, dtype)); shutil.rmtree(d, ignore_errors=True); d.mkdir()
    make_hf_model.make_model(str(d / "hf"), arch=arch, tied=tied, dtype=dtype, seed=5)
    gguf_writer.hf_to_gguf(str(d / "hf"), str(d / "model.gguf"),
                           gguf_writer.GGML_F16 if dtype == "f16" else gguf_writer.GGML_F32)
    cases.append((d.name, d / "model.gguf"))
for arch, tied, q in [("llama", False, "q8_0"), ("qwen3", True, "q4_0"), ("llama", True, "q4_k"), ("qwen3", False, "q6_k")]:
    d = root / ("%s-%s" % (arch, q)); shutil.rmtree(d, ignore_errors=True); d.mkdir()
    _, g = e2e_util.quantized_gguf(d, arch, tied, q)
    cases.append((d.name, g))
for name, model in cases:
    comp(model, art / ("tiny-" + name), T)
    comp(model, root / name / "cpu", "cpu")
    _, P, S, got = e2e_util.run_logits(LLMC, root / name / "cpu", ids, 12, threads=1)
    np.save(root / (name + "-P.npy"), P); np.save(root / (name + "-S.npy"), S)
    ref[name] = got
if T.startswith("cuda"):
    # The f16 model with its prompt products by cuBLAS (+cublas), against
    # the same CPU reference.
    comp(root / "qwen3-f16" / "model.gguf", art / "tiny-qwen3-f16-cublas", T + ",+cublas")
    for k in ("P", "S"):
        shutil.copy(root / ("qwen3-f16-%s.npy" % k), root / ("qwen3-f16-cublas-%s.npy" % k))
    ref["qwen3-f16-cublas"] = ref["qwen3-f16"]
json.dump({"ids": ids, "ref": ref}, open(root / "ref.json", "w"))
models = os.environ.get("LLMC_MODELS_DIR", os.path.join(ROOT, "..", "shared", "models"))
if os.path.exists(os.path.join(models, "stories260K.bin")):
    s260 = [os.path.join(models, "stories260K.bin"), "--tokenizer",
            os.path.join(models, "tok512.bin")]
    for out, target in ((art / "s260", T), (root / "s260-cpu", "cpu")):
        shutil.rmtree(out, ignore_errors=True)
        subprocess.check_call([LLMC, "compile", *s260, "--target", target, "-o", str(out)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p = subprocess.run([LLMC, "run", str(root / "s260-cpu"), "--prompt", "Once upon a time",
                        "--max-tokens", "100", "--print-ids"], capture_output=True, check=True)
    (art.parent / "s260.ref").write_bytes(p.stdout)
print(ref)
