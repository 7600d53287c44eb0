"""Fixtures for the llmc end-to-end tests.

Environment:
  LLMC_BIN_DIR       directory with `llmc` and `llm-opt` (default <repo>/build/bin)
  LLMC_MODELS_DIR    directory with stories260K.bin, tok512.bin (default <repo>/../shared/models)
  LLMC_REQUIRE_BIN=1 fail (instead of skip) when a binary is missing
  LLMC_REQUIRE_ORACLES=1 fail (instead of skip) when an npm oracle (test/oracles) is
                     not installed
  LLMC_TEST_TIMEOUT  seconds per subprocess (default 900)
"""
import os

import pytest

import e2e_util

os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import torch
    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def _binary(name):
    path = os.path.join(e2e_util.bin_dir(), name)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        msg = "%s not found at %s (build it, or set LLMC_BIN_DIR)" % (name, path)
        if os.environ.get("LLMC_REQUIRE_BIN") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def llmc():
    return _binary("llmc")


@pytest.fixture(scope="session")
def llm_opt():
    return _binary("llm-opt")


@pytest.fixture(scope="session")
def models_dir():
    return e2e_util.models_dir()


@pytest.fixture(scope="session")
def model_file(models_dir):
    """model_file("stories260K.bin") -> path, or skip naming the missing file."""
    def get(name):
        path = os.path.join(models_dir, name)
        if not os.path.isfile(path):
            pytest.skip("model file %s not found in %s (set LLMC_MODELS_DIR)" % (name, models_dir))
        return path
    return get


@pytest.fixture(scope="session")
def stories_paths(model_file):
    return model_file("stories260K.bin"), model_file("tok512.bin")


@pytest.fixture(scope="session")
def stories_ref(stories_paths):
    """(Transformer, Tokenizer) of the numpy llama2.c reference."""
    import llama2c_ref
    ckpt, tok = stories_paths
    model = llama2c_ref.Transformer.from_file(ckpt)
    return model, llama2c_ref.Tokenizer(tok, model.cfg.vocab_size)


@pytest.fixture(scope="session")
def stories_artifact(llmc, stories_paths, tmp_path_factory):
    """stories260K compiled once per session: `llmc compile ... --target cpu -o DIR`."""
    ckpt, tok = stories_paths
    out = tmp_path_factory.mktemp("stories") / "ART"
    p = e2e_util.run([llmc, "compile", ckpt, "--tokenizer", tok, "--target", "cpu", "-o", out])
    assert p.returncode == 0, e2e_util.describe(p, "llmc compile stories260K failed")
    assert (out / "metadata.json").is_file(), "no metadata.json in %s" % out
    return out


def require_oracle(ok, what):
    """Skips (or, with LLMC_REQUIRE_ORACLES=1, fails) when an oracle is missing."""
    if ok:
        return
    msg = "%s is not installed (cd test/oracles && npm install --omit=optional)" % what
    if os.environ.get("LLMC_REQUIRE_ORACLES") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def llama_cpp():
    """The llama.cpp oracle (tools/llama_cpp_oracle.py)."""
    import llama_cpp_oracle
    require_oracle(llama_cpp_oracle.available(), "llama.cpp (node-llama-cpp)")
    return llama_cpp_oracle
