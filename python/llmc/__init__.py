"""llmc: compile decoder LLMs with MLIR, from Python.

    import llmc
    m = llmc.import_model("stories260K.bin")          # graph IR
    llmc.PassManager("tl").run(m)                      # every phase up to tl
    sch = llmc.Schedule(m)                             # TIR-style schedule on tl
    art = llmc.compile(llmc.import_model(...), "out.llmc")
    rt = llmc.Runtime(art); rt.generate("Once upon a time", max_tokens=20)

Errors (including MLIR diagnostics, with their locations) raise llmc.Error.
"""
from ._llmc import Error, Module, PassManager, Runtime, parse, import_model
from ._llmc import compile as _compile
from .schedule import Schedule, Trace

__all__ = ["Error", "Module", "PassManager", "Runtime", "Schedule", "Trace",
           "compile", "import_model", "parse"]


def compile(module, output, target="cpu", tokenizer=None, schedule=None, act_quant="exact",
            kv_cache="f32", profile=False, tuning="", mesh=None, roles=None,
            micro_batch=None):
    """Compiles a graph `module` (left unchanged) into the artifact directory
    `output` for `target` ("cpu" is this host; "cpu:znver4",
    "cpu:x86-64-v3,+avxvnni,cores=8", ...); bundles `tokenizer` if given: a llama2.c
    tokenizer.bin (kept as is), or a tokenizer.json, tokenizer.model, GGUF
    file or Hugging Face directory (converted into an llmc tokenizer file).
    `act_quant="llama.cpp"` rounds matmul activations to each weight's kind
    as llama.cpp's CPU backend does (docs/numerics.md); "exact" keeps f32.
    `kv_cache="f16"` stores the keys and values in f16 (llama.cpp's default).
    `profile=True` times every kernel call (`Runtime.profile()`, `llmc bench
    --profile`). `tuning` gives schedule choices per kernel key as `llmc
    tune` measures them ("matmul.prefill.k3072.n1024.f32=r2c2;...").
    `mesh` ("2", "4", "2x2") shards the model over a mesh of ranks, with
    the cost model's plan or, given `roles` (one "tp" or "pp" per axis),
    that one (`llmc compile --mesh` / `--shard-plan`); the artifact runs
    under `mpirun -np <ranks>`. `micro_batch` sets the tokens a pipeline's
    stages take from a prompt at once (0: all; default: the cost model's).

    `schedule`, if given, is called with a Schedule of the module at the
    pipeline's schedule slot (the end of the tl phase: loop nests over
    buffers), before target lowering; what it does is up to it (it may keep
    `sch.trace`). Returns the artifact path."""
    if micro_batch is not None and int(micro_batch) < 0:
        raise ValueError("micro_batch: expected tokens >= 0, got %d" % int(micro_batch))
    hook = None
    if schedule is not None:
        def hook(tl_module):
            schedule(Schedule(tl_module))
    return _compile(module, str(output), target, str(tokenizer) if tokenizer else "", hook,
                    act_quant, kv_cache, profile, tuning, str(mesh) if mesh else "",
                    list(roles or []), -1 if micro_batch is None else int(micro_batch))
