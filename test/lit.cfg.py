# lit configuration for llmc's FileCheck tests.
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "LLMC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.llmc_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "e2e"]

# FileCheck, not and count are not CMake targets out of tree: take them from
# the LLVM install.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llmc_tools_dir, append_path=True)
llvm_config.use_default_substitutions()
models = os.environ.get(
    "LLMC_MODELS_DIR", os.path.join(config.llmc_src_root, "..", "shared", "models"))
config.substitutions.append(("%models", models))
# Tests of the real small models run only where they are present.
if os.path.isfile(os.path.join(models, "stories260K.bin")):
    config.available_features.add("models")
else:
    lit_config.note("models not found in %s: model tests are unsupported" % models)
