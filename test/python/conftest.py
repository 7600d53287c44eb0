"""Fixtures for the Python API tests: puts build/python on sys.path."""
import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("LLMC_BUILD_DIR", os.path.join(REPO, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(REPO, "test", "e2e", "tools"))
MODELS = os.environ.get("LLMC_MODELS_DIR", os.path.join(REPO, "..", "shared", "models"))


@pytest.fixture(scope="session")
def llmc():
    import llmc as module
    return module


@pytest.fixture(scope="session")
def llmc_bin():
    return os.path.join(BUILD, "bin", "llmc")


@pytest.fixture(scope="session")
def stories():
    path = os.path.join(MODELS, "stories260K.bin")
    tok = os.path.join(MODELS, "tok512.bin")
    if not (os.path.isfile(path) and os.path.isfile(tok)):
        pytest.skip("stories260K.bin/tok512.bin not found in %s" % MODELS)
    return path, tok


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A deterministic random llama2.c checkpoint (no tokenizer)."""
    out = tmp_path_factory.mktemp("tiny") / "tiny.bin"
    subprocess.check_call([sys.executable, os.path.join(REPO, "test", "e2e", "tools",
                                                        "make_llama2c_model.py"),
                           "--out", str(out), "--seq-len", "64"])
    return str(out)
