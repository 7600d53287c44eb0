//===- MetadataTest.cpp - Tests of artifact metadata validation -*- C++ -*-===//
//
// Each broken artifact is a temporary directory; the tests check that the
// message names the file and the field a user has to fix.
//
//===----------------------------------------------------------------------===//

#include "Metadata.h"
#include "TestUtil.h"

#include "llmc/runtime.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace llmc::rt;
using llmc::test::TempDir;
using llmc::test::writeFile;

namespace {

const char *kValidMetadata = R"({
  "format": "llmc-artifact",
  "version": 4,
  "target": "cpu",
  "library": "model.so",
  "weights": {"file": "weights.bin", "bytes": 128},
  "model": {
    "arch": "llama", "dim": 64, "hidden_dim": 172, "n_layers": 5, "n_heads": 8,
    "n_kv_heads": 4, "head_dim": 8, "vocab_size": 512, "max_seq_len": 16,
    "rope_theta": 10000.0, "rms_eps": 1e-05, "bos_id": 1, "eos_ids": [2]
  },
  "kv_cache": {"dtype": "f32", "shape": [5, 2, 4, 128],
               "layout": "layer, k|v, kv_head, k: position x head_dim | v: head_dim x position"},
  "entry": {"forward": "_mlir_ciface_forward"},
  "arena": {"alignment": 64, "plans": [
    [{"bytes": 4096, "of": []}, {"bytes": 64, "of": ["pos0"]}],
    [{"bytes": 1024, "of": ["tokens"]}, {"bytes": 64, "of": ["tokens", "pos0"]},
     {"bytes": 128, "of": ["n_out"]}]]},
  "params": [],
  "tokenizer": null
})";

/// Returns kValidMetadata with the first occurrence of `from` replaced.
std::string patched(const std::string &from, const std::string &to) {
  std::string s = kValidMetadata;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

/// An artifact directory with the given metadata and a weights.bin.
struct Artifact {
  explicit Artifact(const std::string &metadata, size_t weightBytes = 128) {
    writeFile(dir.file("metadata.json"), metadata);
    writeFile(dir.file("weights.bin"), std::string(weightBytes, '\0'));
  }
  std::string metadataPath() const { return dir.file("metadata.json"); }
  TempDir dir;
};

/// Runs readMetadata on `a`, expecting failure; returns the message.
std::string metadataError(const Artifact &a) {
  try {
    readMetadata(a.dir.path());
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "metadata accepted";
  return "";
}

/// Runs llmc::Model::open, expecting failure; returns the message.
std::string openError(const std::string &dir) {
  try {
    llmc::Model::open(dir);
  } catch (const llmc::Error &e) {
    return e.what();
  }
  ADD_FAILURE() << "artifact opened";
  return "";
}

TEST(MetadataTest, ValidMetadata) {
  Artifact a(patched("\"tokenizer\": null",
                     R"("tokenizer": {"kind": "llama2c", "file": "tok.bin"})"));
  ArtifactMetadata md = readMetadata(a.dir.path());
  EXPECT_EQ(md.version, LLMC_ARTIFACT_VERSION);
  EXPECT_EQ(md.target, "cpu");
  EXPECT_EQ(md.arch, "llama");
  EXPECT_EQ(md.libraryPath, a.dir.file("model.so"));
  EXPECT_EQ(md.weightsPath, a.dir.file("weights.bin"));
  EXPECT_EQ(md.weightsBytes, 128);
  EXPECT_EQ(md.vocabSize, 512);
  EXPECT_EQ(md.maxSeqLen, 16);
  EXPECT_EQ(md.bosId, 1);
  EXPECT_EQ(md.eosIds, std::vector<int32_t>{2});
  EXPECT_EQ(md.kvCacheShape, (std::vector<int64_t>{5, 2, 4, 128}));
  EXPECT_EQ(md.forwardSymbol, "_mlir_ciface_forward");
  EXPECT_EQ(md.tokenizerPath, a.dir.file("tok.bin"));
  ASSERT_EQ(md.arenaPlans.size(), 2u);
  EXPECT_EQ(md.arenaPlans[1][1].sizes, (std::vector<int>{0, 1}));
}

TEST(MetadataTest, PipelineMicroBatch) {
  // A pipeline's dist: its axes, its stage, each stage's directory and the
  // plan's micro-batch (absent: 0, whole calls).
  const std::string weights =
      R"("weights": {"file": "weights.bin", "bytes": 128})";
  std::string dist = R"("weights": {"file": "w{rank}.bin", "bytes": 128},
      "dist": {"ranks": 2, "shape": [2], "axes": ["pp"], "groups": [["pp"]],
               "pp": ["pp"], "stage": 0, "stage_dirs": [".", "stage1"])";
  Artifact a(patched(weights, dist + R"(, "micro_batch": 16})"));
  ArtifactMetadata md = readMetadata(a.dir.path());
  ASSERT_TRUE(md.dist.has_value());
  EXPECT_EQ(md.dist->microBatch, 16);
  EXPECT_EQ(md.dist->ppAxes, std::vector<int>{0});
  EXPECT_EQ(md.dist->stageDirs, (std::vector<std::string>{".", "stage1"}));
  Artifact whole(patched(weights, dist + "}"));
  EXPECT_EQ(readMetadata(whole.dir.path()).dist->microBatch, 0);
}

/// kValidMetadata with one kernel whose work is `flops`.
std::string withKernel(const std::string &flops) {
  return patched("\"params\": []",
                 R"("profiled": true, "kernels": [{"name": "forward.mm",
                     "phase": "prefill", "calls": 2, "exact": true,
                     "flops": )" +
                     flops + R"(, "int_ops": [], "instructions": [],
                     "bytes": [{"c": 512, "of": []}], "parallel": [],
                     "trips": [{"c": 1, "of": ["tokens"]}]}], "params": [])");
}

TEST(MetadataTest, KernelWork) {
  // 1.5 per token, 2 per full tile of 4 tokens times pos0.
  Artifact a(withKernel(R"([{"c": 1.5, "of": ["tokens"]},
                            {"c": 2, "of": ["tokens/4", "pos0"]}])"));
  ArtifactMetadata md = readMetadata(a.dir.path());
  EXPECT_TRUE(md.profiled);
  ASSERT_EQ(md.kernels.size(), 1u);
  const ArtifactMetadata::Kernel &k = md.kernels[0];
  EXPECT_EQ(k.name, "forward.mm");
  EXPECT_EQ(k.phase, "prefill");
  EXPECT_EQ(k.calls, 2);
  // 7 tokens at pos0 = 3: 1.5 * 7 + 2 * floor(7 / 4) * 3.
  EXPECT_DOUBLE_EQ(ArtifactMetadata::evaluate(k.flops, 7, 3, 1), 16.5);
  EXPECT_DOUBLE_EQ(ArtifactMetadata::evaluate(k.bytes, 7, 3, 1), 512);
  EXPECT_DOUBLE_EQ(ArtifactMetadata::evaluate(k.parallel, 7, 3, 1), 0);
  // Without the fields: no kernels, not profiled.
  ArtifactMetadata plain = readMetadata(Artifact(kValidMetadata).dir.path());
  EXPECT_FALSE(plain.profiled);
  EXPECT_TRUE(plain.kernels.empty());
}

TEST(MetadataTest, BadKernelWork) {
  struct Case {
    std::string flops, message;
  };
  for (
      const Case &c : std::vector<Case>{
          {R"([{"c": 1, "of": ["tokens/0"]}])",
           "field 'kernels[0].flops[0].of' has a size over \"0\", expected "
           "a positive integer"},
          {R"([{"c": 1, "of": ["tokens/x"]}])",
           "field 'kernels[0].flops[0].of' has a size over \"x\", expected "
           "a positive integer"},
          {R"([{"c": 1, "of": ["tokens/ +4"]}])",
           "field 'kernels[0].flops[0].of' has a size over \" +4\", expected "
           "a positive integer"},
          {R"([{"c": 1, "of": ["tokens", "pos0", "n_out", "tokens", "pos0"]}])",
           "field 'kernels[0].flops[0].of' must be an array of at most 4 size "
           "names (tokens, pos0, n_out)"},
          {R"([{"c": 1, "of": ["layers"]}])",
           "field 'kernels[0].flops[0].of' names an unknown size (expected "
           "tokens, pos0 or n_out)"},
          {R"([{"c": "1", "of": []}])",
           "field 'kernels[0].flops[0]' must be an object {c: number, of: "
           "sizes}"},
          {R"({"c": 1})",
           "field 'kernels[0].flops' must be an array of terms {c, of}"}}) {
    Artifact a(withKernel(c.flops));
    EXPECT_EQ(metadataError(a), a.metadataPath() + ": " + c.message) << c.flops;
  }
  std::string inexact = withKernel("[]");
  inexact.replace(inexact.find("\"exact\": true"), 13, "\"exact\": 1");
  Artifact exactNotBool(inexact);
  EXPECT_EQ(metadataError(exactNotBool),
            exactNotBool.metadataPath() +
                ": field 'kernels[0].exact' must be true or false");
  Artifact notBool(patched("\"params\": []", R"("profiled": 1, "params": [])"));
  EXPECT_EQ(metadataError(notBool),
            notBool.metadataPath() +
                ": field 'profiled' must be true or false");
}

TEST(MetadataTest, KVCacheElementBytes) {
  EXPECT_EQ(readMetadata(Artifact(kValidMetadata).dir.path()).kvCacheElementBytes,
            4);
  Artifact a(patched("\"dtype\": \"f32\"", "\"dtype\": \"f16\""));
  EXPECT_EQ(readMetadata(a.dir.path()).kvCacheElementBytes, 2);
}

TEST(MetadataTest, EveryKVCacheLayoutIsAccepted) {
  for (const char *layout :
       {LLMC_KV_CACHE_LAYOUT, LLMC_KV_CACHE_LAYOUT_BY_POSITION,
        LLMC_KV_CACHE_LAYOUT_FLASH, LLMC_KV_CACHE_LAYOUT_BLOCKED}) {
    Artifact a(patched(LLMC_KV_CACHE_LAYOUT, layout));
    EXPECT_NO_THROW(readMetadata(a.dir.path())) << layout;
  }
}

TEST(MetadataTest, ArenaIsTheLargestPlan) {
  Artifact a(kValidMetadata);
  ArtifactMetadata md = readMetadata(a.dir.path());
  // One token at pos0 = 10: max(4096 + 640, 1024 + 640 + 128).
  EXPECT_EQ(md.arenaBytes(1, 10, 1), 4736);
  // 8 tokens at pos0 = 2, 3 rows: max(4096 + 128, 8192 + 1024 + 384).
  EXPECT_EQ(md.arenaBytes(8, 2, 3), 9600);
}

TEST(MetadataTest, NoTokenizerAndNoBos) {
  Artifact a(patched("\"bos_id\": 1", "\"bos_id\": -1"));
  ArtifactMetadata md = readMetadata(a.dir.path());
  EXPECT_EQ(md.bosId, -1);
  EXPECT_TRUE(md.tokenizerPath.empty());
}

TEST(MetadataTest, MissingMetadataFile) {
  TempDir dir;
  std::string msg = openError(dir.path());
  EXPECT_EQ(msg.find(dir.file("metadata.json") + ": cannot open"), 0u) << msg;
}

TEST(MetadataTest, MalformedJsonNamesFileAndPosition) {
  Artifact a("{\n  \"format\": \"llmc-artifact\",\n}");
  EXPECT_EQ(metadataError(a), a.metadataPath() +
                                  ": line 3, column 1: trailing comma "
                                  "before '}'");
}

TEST(MetadataTest, TopLevelNotAnObject) {
  Artifact a("[1]");
  EXPECT_EQ(metadataError(a),
            a.metadataPath() + ": expected a JSON object at the top level");
}

TEST(MetadataTest, UnknownFormat) {
  Artifact a(patched("\"llmc-artifact\"", "\"onnx\""));
  EXPECT_EQ(metadataError(a),
            a.metadataPath() +
                ": unknown format \"onnx\" (expected \"llmc-artifact\")");
}

TEST(MetadataTest, UnsupportedVersion) {
  // An artifact of the previous format (its forward computes every row of
  // logits, without n_out).
  Artifact a(patched("\"version\": 4", "\"version\": 2"));
  EXPECT_EQ(metadataError(a), a.metadataPath() +
                                  ": unsupported version 2 (this runtime "
                                  "supports 4; compile the model again with "
                                  "this llmc)");
}

struct FieldCase {
  const char *from, *to; // the patch to kValidMetadata
  const char *message;   // expected message after "<path>: "
};

class MetadataFieldTest : public testing::TestWithParam<FieldCase> {};

TEST_P(MetadataFieldTest, NamesFileAndField) {
  Artifact a(patched(GetParam().from, GetParam().to));
  EXPECT_EQ(metadataError(a), a.metadataPath() + ": " + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Fields, MetadataFieldTest,
    testing::Values(
        FieldCase{"\"format\": \"llmc-artifact\",", "",
                  "field 'format' is missing"},
        FieldCase{"\"version\": 4", "\"version\": \"3\"",
                  "field 'version' must be an integer"},
        FieldCase{"\"version\": 4", "\"version\": 3.0",
                  "field 'version' must be an integer"},
        FieldCase{"\"target\": \"cpu\",", "", "field 'target' is missing"},
        FieldCase{"\"library\": \"model.so\"", "\"library\": 3",
                  "field 'library' must be a string, got a number"},
        FieldCase{"\"library\": \"model.so\"", "\"library\": \"/x.so\"",
                  "field 'library' must be a path relative to the artifact "
                  "directory, got \"/x.so\""},
        FieldCase{"\"weights\": {\"file\": \"weights.bin\", \"bytes\": 128}",
                  "\"weights\": []",
                  "field 'weights' must be an object, got an array"},
        FieldCase{"\"file\": \"weights.bin\", ", "",
                  "field 'weights.file' is missing"},
        FieldCase{"\"bytes\": 128", "\"bytes\": -1",
                  "field 'weights.bytes' is -1, expected a value in [0, "
                  "9223372036854775807]"},
        FieldCase{"\"bytes\": 128",
                  "\"bytes\": 128, \"decode_read_bytes\": 129",
                  "field 'weights.decode_read_bytes' is 129, expected a value "
                  "in [0, 128]"},
        FieldCase{"\"bytes\": 128",
                  "\"bytes\": 128, \"decode_read_bytes\": \"64\"",
                  "field 'weights.decode_read_bytes' must be an integer, got a "
                  "string"},
        FieldCase{"\"weights\": {\"file\": \"weights.bin\", \"bytes\": 128}",
                  "\"weights\": {\"file\": \"w{rank}.bin\", \"bytes\": 128}, "
                  "\"dist\": {\"ranks\": 2, \"shape\": [2], \"axes\": "
                  "[\"pp\"], \"groups\": [[\"pp\"]], \"pp\": [\"pp\"], "
                  "\"micro_batch\": -1}",
                  "field 'dist.micro_batch' is -1, expected a value in [0, "
                  "9223372036854775807]"},
        FieldCase{"\"bytes\": 128}", "\"bytes\": 128}, \"compute\": 7",
                  "field 'compute' must be an object, got a number"},
        FieldCase{"\"bytes\": 128}",
                  "\"bytes\": 128}, \"compute\": {\"token_flops\": 1, "
                  "\"row_flops\": 2}",
                  "field 'compute.pair_flops' is missing"},
        FieldCase{"\"bytes\": 128}",
                  "\"bytes\": 128}, \"compute\": {\"token_flops\": -1, "
                  "\"row_flops\": 2, \"pair_flops\": 3}",
                  "field 'compute.token_flops' is -1, expected a value in [0, "
                  "9223372036854775807]"},
        FieldCase{"\"vocab_size\": 512, ", "",
                  "field 'model.vocab_size' is missing"},
        FieldCase{"\"vocab_size\": 512", "\"vocab_size\": \"512\"",
                  "field 'model.vocab_size' must be an integer, got a string"},
        FieldCase{"\"vocab_size\": 512", "\"vocab_size\": 0",
                  "field 'model.vocab_size' is 0, expected a value in [1, "
                  "2147483647]"},
        FieldCase{"\"max_seq_len\": 16", "\"max_seq_len\": 16.5",
                  "field 'model.max_seq_len' must be an integer, got a "
                  "non-integer number"},
        FieldCase{"\"bos_id\": 1", "\"bos_id\": 512",
                  "field 'model.bos_id' is 512, expected a value in [-1, "
                  "511]"},
        FieldCase{"\"bos_id\": 1, ", "", "field 'model.bos_id' is missing"},
        FieldCase{"\"eos_ids\": [2]", "\"eos_ids\": 2",
                  "field 'model.eos_ids' must be an array of integers"},
        FieldCase{"\"eos_ids\": [2]", "\"eos_ids\": [2, null]",
                  "field 'model.eos_ids[1]' must be an integer, got null"},
        FieldCase{"\"eos_ids\": [2]", "\"eos_ids\": [600]",
                  "field 'model.eos_ids[0]' is 600, expected a value in [0, "
                  "511]"},
        FieldCase{"\"dtype\": \"f32\"", "\"dtype\": \"bf16\"",
                  "field 'kv_cache.dtype' is \"bf16\", expected \"f32\" or "
                  "\"f16\""},
        FieldCase{"v: head_dim x position", "v: position x head_dim",
                  "field 'kv_cache.layout' is \"layer, k|v, kv_head, k: "
                  "position x head_dim | v: position x head_dim\", expected "
                  "\"" LLMC_KV_CACHE_LAYOUT "\", "
                  "\"" LLMC_KV_CACHE_LAYOUT_BY_POSITION "\", "
                  "\"" LLMC_KV_CACHE_LAYOUT_FLASH "\" or "
                  "\"" LLMC_KV_CACHE_LAYOUT_BLOCKED "\""},
        FieldCase{"\"shape\": [5, 2, 4, 128]", "\"shape\": [5, 2, 16, 4, 8]",
                  "field 'kv_cache.shape' must be an array of 4 integers"},
        FieldCase{"\"shape\": [5, 2, 4, 128]", "\"shape\": [5, 2, 0, 128]",
                  "field 'kv_cache.shape[2]' is 0, expected a value in [1, "
                  "2147483647]"},
        FieldCase{"\"shape\": [5, 2, 4, 128]", "\"shape\": [5, 3, 4, 128]",
                  "field 'kv_cache.shape[1]' is 3, expected 2 (k and v)"},
        FieldCase{"\"shape\": [5, 2, 4, 128]", "\"shape\": [5, 2, 4, 120]",
                  "field 'kv_cache.shape[3]' is 120, expected a multiple of "
                  "model.max_seq_len = 16"},
        FieldCase{"\"entry\": {\"forward\": \"_mlir_ciface_forward\"}",
                  "\"entry\": {}", "field 'entry.forward' is missing"},
        FieldCase{"\"tokenizer\": null", "\"tokenizer\": 1",
                  "field 'tokenizer' must be an object or null"},
        FieldCase{"\"tokenizer\": null",
                  "\"tokenizer\": {\"kind\": \"hf\", \"file\": \"t.json\"}",
                  "field 'tokenizer.kind' is \"hf\", expected \"llmc\" or "
                  "\"llama2c\""},
        FieldCase{",\n  \"tokenizer\": null", "",
                  "field 'tokenizer' is missing"},
        FieldCase{"\"alignment\": 64", "\"alignment\": 96",
                  "field 'arena.alignment' is 96, expected a power of two"},
        FieldCase{"[{\"bytes\": 4096, \"of\": []}, ", "[3, ",
                  "field 'arena.plans[0][0]' must be an object {bytes, of}"},
        FieldCase{"\"bytes\": 4096", "\"bytes\": -1",
                  "field 'arena.plans[0][0].bytes' is -1, expected a value in "
                  "[0, 1099511627776]"},
        FieldCase{"\"of\": [\"pos0\"]", "\"of\": [\"context\"]",
                  "field 'arena.plans[0][1].of' names an unknown size "
                  "(expected tokens, pos0 or n_out)"},
        FieldCase{"\"of\": [\"pos0\"]",
                  "\"of\": [\"pos0\", \"pos0\", \"pos0\"]",
                  "field 'arena.plans[0][1].of' must be an array of at most 2 "
                  "size names (tokens, pos0, n_out)"},
        FieldCase{"\"arena\": {", "\"scratch\": {",
                  "field 'arena' is missing"}));

TEST(MetadataTest, WeightsSizeMismatch) {
  Artifact a(kValidMetadata, /*weightBytes=*/100);
  EXPECT_EQ(openError(a.dir.path()),
            a.dir.file("weights.bin") + ": size is 100 bytes but " +
                a.metadataPath() + " says weights.bytes = 128");
}

TEST(MetadataTest, MissingWeights) {
  Artifact a(kValidMetadata);
  ::unlink(a.dir.file("weights.bin").c_str());
  std::string msg = openError(a.dir.path());
  EXPECT_EQ(msg.find(a.dir.file("weights.bin") + ": cannot open"), 0u) << msg;
}

TEST(MetadataTest, MissingTokenizerFile) {
  Artifact a(patched("\"tokenizer\": null",
                     R"("tokenizer": {"kind": "llama2c", "file": "tok.bin"})"));
  std::string msg = openError(a.dir.path());
  EXPECT_EQ(msg.find(a.dir.file("tok.bin") + ": cannot read tokenizer"), 0u)
      << msg;
}

TEST(MetadataTest, MissingLibrary) {
  Artifact a(kValidMetadata);
  std::string msg = openError(a.dir.path());
  EXPECT_EQ(msg.find(a.dir.file("model.so") + ": cannot load: "), 0u) << msg;
}

TEST(MetadataTest, LibraryIsNotAnElfFile) {
  Artifact a(kValidMetadata);
  writeFile(a.dir.file("model.so"), "not an ELF file");
  std::string msg = openError(a.dir.path());
  EXPECT_EQ(msg.find(a.dir.file("model.so") + ": cannot load: "), 0u) << msg;
}

} // namespace
