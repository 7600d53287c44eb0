"""stories260K (llama2.c checkpoint + tok512 tokenizer) through llmc vs the numpy
llama2.c reference, token for token."""
import pytest

import e2e_util
import llama2c_ref

STOP_IDS = (llama2c_ref.BOS_ID, llama2c_ref.EOS_ID)


def _ref_ids(stories_ref, prompt, steps):
    model, tok = stories_ref
    prompt_ids = tok.encode(prompt, bos=True, eos=False)
    return prompt_ids, llama2c_ref.generate(model, prompt_ids, steps)


def _check_ids(got, want, steps, p):
    """`got` (llmc) must equal the reference ids; where the reference stopped early at
    BOS/EOS, llmc may additionally have printed that stop token."""
    if len(want) < steps and len(got) == len(want) + 1 and got[-1] in STOP_IDS:
        got = got[:-1]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, e2e_util.describe(p, "first mismatch at generated token %d: llmc %d, reference %d\n"
                                            "llmc: %s\nref:  %s" % (i, g, w, got, want))
    assert len(got) == len(want), e2e_util.describe(
        p, "llmc produced %d ids, reference %d\nllmc: %s\nref:  %s" % (len(got), len(want), got, want))


def test_greedy_from_bos_ids(llmc, stories_artifact, stories_ref):
    _, want = _ref_ids(stories_ref, "", 100)
    p = e2e_util.run([llmc, "run", stories_artifact, "--prompt", "", "--max-tokens", 100, "--print-ids"])
    assert p.returncode == 0, e2e_util.describe(p, "llmc run failed")
    _check_ids(e2e_util.parse_ids(p.stdout), want, 100, p)


def test_greedy_from_bos_text(llmc, stories_artifact, stories_ref):
    model, tok = stories_ref
    prompt_ids, ids = _ref_ids(stories_ref, "", 100)
    want_text = tok.decode_ids(prompt_ids[-1], ids).decode("utf-8", errors="replace")
    p = e2e_util.run([llmc, "run", stories_artifact, "--prompt", "", "--max-tokens", 100])
    assert p.returncode == 0, e2e_util.describe(p, "llmc run failed")
    text = p.stdout.lstrip()
    assert text.startswith("Once upon a time"), e2e_util.describe(p, "unexpected text")
    assert text.startswith("Once upon a time, there was a little girl named Lily."), \
        e2e_util.describe(p, "unexpected text")
    assert want_text.strip() in p.stdout, e2e_util.describe(
        p, "llmc text differs from the reference text:\n%r" % want_text)


def test_prompt_once_upon_a_time(llmc, stories_artifact, stories_ref):
    prompt = "Once upon a time"
    _, want = _ref_ids(stories_ref, prompt, 40)
    p = e2e_util.run([llmc, "run", stories_artifact, "--prompt", prompt, "--max-tokens", 40, "--print-ids"])
    assert p.returncode == 0, e2e_util.describe(p, "llmc run failed")
    _check_ids(e2e_util.parse_ids(p.stdout), want, 40, p)


def test_artifact_metadata(stories_artifact):
    import json
    meta = json.loads((stories_artifact / "metadata.json").read_text())
    assert meta["format"] == "llmc-artifact"
    m = meta["model"]
    assert (m["dim"], m["hidden_dim"], m["n_layers"], m["n_heads"], m["n_kv_heads"],
            m["vocab_size"], m["max_seq_len"]) == (64, 172, 5, 8, 4, 512, 512)
    assert meta["tokenizer"] is not None


def test_stories260k_threads(llmc, stories_artifact):
    """One thread and two give the same logits (exact mode: within 1e-5)."""
    prompt = [1, 403, 407, 261, 378, 271]
    got = e2e_util.run_logits(llmc, stories_artifact, prompt, 40)
    e2e_util.check_threads(llmc, stories_artifact, prompt, 40, got)
