//===- RunCommand.cpp - llmc run: generate text ----------------*- C++ -*-===//
//-*-===//
//
// stdout carries only the generated text (or ids with --print-ids), flushed
// per token, so that the output can be piped and compared in tests; every
// diagnostic and the optional timing summary go to stderr.
//
//===----------------------------------------------------------------------===//

#include "CommandOptions.h"
#include "Commands.h"

#include "llmc/runtime.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace llmc::cli;

namespace {

const char *kRunUsage =
    "usage: llmc run DIR [--prompt TEXT] [--max-tokens N] [--temperature T]\n"
    "                [--top-k K] [--top-p P] [--seed S] [--prompt-ids 1,2,3]\n"
    "                [--dump-logits FILE.npy] [--dump-prompt-logits FILE.npy]\n"
    "                [--print-ids] [--threads N] [--micro-batch N]\n"
    "                [--device N] [--verbose]\n"
    "\n"
    "Generates up to N tokens (default 256) after the prompt and prints them.\n"
    "  --prompt TEXT       prompt text, with BOS as the tokenizer says and\n"
    "                      special tokens (<|im_start|>, <s>) recognized;\n"
    "                      empty or absent: start from BOS alone\n"
    "  --prompt-ids LIST   prompt token ids (no tokenizer needed); overrides\n"
    "                      --prompt\n"
    "  --max-tokens N      tokens to generate (an EOS token counts and stops)\n"
    "  --temperature T     0 (default) is greedy decoding\n"
    "  --top-k K           sample among the K most likely tokens (0 = all)\n"
    "  --top-p P           nucleus sampling threshold in (0, 1] (default 1)\n"
    "  --seed S            sampling seed (default 42)\n"
    "  --dump-logits F     write the logits each token was chosen from,\n"
    "                      float32 [generated, vocab], to F (.npy)\n"
    "  --dump-prompt-logits F\n"
    "                      write the logits of every prompt position,\n"
    "                      float32 [prompt, vocab], to F (.npy)\n"
    "  --print-ids         print generated token ids instead of text\n"
    "  --threads N         threads of the compiled code (default: "
    "LLMC_THREADS,\n"
    "                      else every core)\n"
    "  --micro-batch N     run the prompt in calls of at most N tokens (0:\n"
    "                      one call; default: the artifact's, 0 unless a\n"
    "                      pipeline's, whose stages then work at once)\n"
    "  --device N          the GPU of a vulkan or cuda artifact, among the\n"
    "                      devices of its kind (default: LLMC_DEVICE, else 0;\n"
    "                      `llmc devices` lists them)\n"
    "  --verbose           print a timing summary to stderr\n";

struct RunOptions {
  std::string dir;
  std::string prompt;
  std::optional<Option> promptIds; // parsed once the vocabulary is known
  int64_t maxTokens = 256;
  llmc::SamplerConfig sampling;
  std::string dumpLogits;
  std::string dumpPromptLogits;
  bool printIds = false;
  bool verbose = false;
  bool help = false;
  int32_t threads = 0; // 0: the runtime's default
  int64_t microBatch = -1; // -1: the artifact's
};

RunOptions parseRunOptions(int argc, char **argv) {
  std::vector<Option> options;
  std::vector<std::string> positional;
  scanArguments(
      argc, argv,
      {"--prompt", "--max-tokens", "--temperature", "--top-k", "--top-p",
       "--seed", "--dump-logits", "--prompt-ids", "--dump-prompt-logits",
       "--threads", "--device", "--micro-batch"},
      {"--print-ids", "--verbose", "--help", "-h"}, options, positional);
  RunOptions r;
  for (const Option &o : options) {
    if (o.name == "--help" || o.name == "-h") {
      r.help = true;
      return r;
    }
  }
  for (const Option &o : options) {
    if (o.name == "--prompt")
      r.prompt = o.value;
    else if (o.name == "--prompt-ids")
      r.promptIds = o;
    else if (o.name == "--max-tokens")
      r.maxTokens = parseInteger(o, 0, INT32_MAX, "a non-negative integer");
    else if (o.name == "--temperature")
      r.sampling.temperature =
          static_cast<float>(parseNumber(o, 0, 1e6, false, "a number >= 0"));
    else if (o.name == "--top-k")
      r.sampling.topK = static_cast<int32_t>(
          parseInteger(o, 0, INT32_MAX, "a non-negative integer"));
    else if (o.name == "--top-p")
      r.sampling.topP =
          static_cast<float>(parseNumber(o, 0, 1, true, "a number in (0, 1]"));
    else if (o.name == "--seed")
      r.sampling.seed = parseUnsigned(o);
    else if (o.name == "--dump-logits")
      r.dumpLogits = o.value;
    else if (o.name == "--dump-prompt-logits")
      r.dumpPromptLogits = o.value;
    else if (o.name == "--print-ids")
      r.printIds = true;
    else if (o.name == "--verbose")
      r.verbose = true;
    else if (o.name == "--threads")
      r.threads = static_cast<int32_t>(
          parseInteger(o, 1, 4096, "a positive integer"));
    else if (o.name == "--device")
      selectDevice(o);
    else if (o.name == "--micro-batch")
      r.microBatch = parseInteger(o, 0, INT32_MAX, "a non-negative integer");
  }
  r.dir = artifactDir(positional, "run");
  if (!r.dumpLogits.empty() && r.dumpLogits == r.dumpPromptLogits)
    throw CommandError("--dump-prompt-logits",
                       "same file as --dump-logits ('" + r.dumpLogits + "')");
  return r;
}

/// Writes a decoded piece to stdout. Like llama2.c's safe_printf, drops lone
/// control bytes (a byte token such as <0x07>) but keeps whitespace and the
/// bytes >= 0x80 that byte-fallback tokens use to spell UTF-8.
void writePiece(std::string_view piece) {
  if (piece.size() == 1) {
    unsigned char c = static_cast<unsigned char>(piece[0]);
    bool space = c == ' ' || (c >= '\t' && c <= '\r');
    if ((c < 0x20 && !space) || c == 0x7f)
      return;
  }
  std::fwrite(piece.data(), 1, piece.size(), stdout);
}

/// Fails early, before a long generation, if `path` cannot be created.
void checkWritable(const std::string &path) {
  if (path.empty())
    return;
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  if (::access(dir.c_str(), W_OK) != 0)
    throw CommandError(path, "cannot open for writing: " +
                                 std::string(std::strerror(errno)));
}

int generateWith(llmc::Model &model, const RunOptions &opts);

int run(const RunOptions &opts) {
  llmc::Model model = llmc::Model::open(opts.dir);
  return onEveryRank(model, [&] { return generateWith(model, opts); });
}

int generateWith(llmc::Model &model, const RunOptions &opts) {
  // A sharded model's ranks run the same calls (the same collectives):
  // rank 0 prints the tokens and writes the dumps (onEveryRank silenced
  // the others).
  bool writes = model.rank() == 0;
  if (writes) {
    checkWritable(opts.dumpLogits);
    checkWritable(opts.dumpPromptLogits);
  }
  const int64_t vocab = model.vocabSize();
  if (opts.threads)
    model.setThreads(opts.threads);
  if (opts.microBatch >= 0)
    model.setMicroBatch(opts.microBatch);

  // The tokenizer is needed to encode a text prompt and to print text.
  bool needTokenizer = !opts.promptIds || !opts.printIds;
  if (needTokenizer && !model.hasTokenizer())
    throw CommandError(opts.dir,
                       opts.promptIds
                           ? "the artifact has no tokenizer to print text "
                             "with; use --print-ids"
                           : "the artifact has no tokenizer; give the prompt "
                             "as --prompt-ids (and use --print-ids)");
  std::optional<llmc::Tokenizer> tokenizer;
  if (needTokenizer)
    tokenizer = llmc::Tokenizer::forModel(model);

  std::vector<int32_t> prompt;
  const char *promptOption = "--prompt";
  if (opts.promptIds) {
    prompt = parseIdList(*opts.promptIds, vocab);
    promptOption = "--prompt-ids";
  } else {
    // BOS (and EOS) as the tokenizer's metadata says; special tokens such as
    // <|im_start|> written in the prompt are those tokens.
    prompt = tokenizer->tokenize(opts.prompt, LLMC_TOKENIZE_ADD_SPECIAL |
                                                  LLMC_TOKENIZE_PARSE_SPECIAL);
    // Nothing to start from (an empty prompt and no BOS added): the model's
    // BOS, else the tokenizer's.
    if (prompt.empty()) {
      int32_t start = model.bosId() >= 0 ? model.bosId() : tokenizer->bosId();
      if (start < 0)
        throw CommandError("--prompt", "the prompt is empty and the model has "
                                       "no BOS token to start from");
      prompt.push_back(start);
    }
  }
  if (static_cast<int64_t>(prompt.size()) > model.maxSeqLen())
    throw CommandError(promptOption,
                       "the prompt has " + std::to_string(prompt.size()) +
                           " tokens but the model's max_seq_len is " +
                           std::to_string(model.maxSeqLen()));

  llmc::Sampler sampler(opts.sampling, vocab);
  std::vector<float> promptLogits, tokenLogits;
  int32_t prev = prompt.back();
  bool firstId = true;
  llmc::GenerateCallbacks callbacks;
  if (!opts.dumpPromptLogits.empty())
    callbacks.onPromptLogits = [&](const float *logits, int64_t n) {
      promptLogits.assign(logits, logits + n * vocab);
      return false;
    };
  callbacks.onToken = [&](int32_t token, const float *logits) {
    if (!opts.dumpLogits.empty())
      tokenLogits.insert(tokenLogits.end(), logits, logits + vocab);
    if (opts.printIds) {
      std::printf(firstId ? "%d" : " %d", token);
      firstId = false;
    } else if (!model.isEos(token)) {
      writePiece(tokenizer->decode(prev, token));
    }
    std::fflush(stdout);
    prev = token;
    return false;
  };
  llmc_generate_stats stats =
      llmc::generate(model, sampler, prompt, opts.maxTokens, callbacks);
  if (opts.printIds || isatty(STDOUT_FILENO))
    std::fputs("\n", stdout);
  std::fflush(stdout);

  if (writes && !opts.dumpPromptLogits.empty())
    llmc::writeNpy(opts.dumpPromptLogits, promptLogits.data(),
                   stats.prompt_tokens, vocab);
  if (writes && !opts.dumpLogits.empty())
    llmc::writeNpy(opts.dumpLogits, tokenLogits.data(), stats.generated_tokens,
                   vocab);

  if (opts.verbose) {
    // Each rank's weights (a sharded model: its blob, about 1/N of the
    // whole), on every rank.
    const char *weights = model.info().weights_path;
    std::fflush(stdout);
    std::fprintf(stderr,
                 "\nmemory: rank %d: %s, %lld bytes mapped, %lld KiB "
                 "resident\n",
                 model.rank(), weights,
                 static_cast<long long>(model.info().weights_bytes),
                 residentKiB(weights));
  }
  if (opts.verbose && writes) {
    auto rate = [](int64_t n, double s) { return s > 0 ? n / s : 0.0; };
    static const char *reasons[] = {"max tokens", "EOS", "max_seq_len",
                                    "callback"};
    // The summary starts on a line of its own even when the text did not
    // end with one (stdout and stderr often share a terminal).
    std::fflush(stdout);
    std::fprintf(stderr,
                 "\nprefill: %lld tokens in %.3f ms (%.1f tok/s)\n"
                 "decode: %lld tokens in %.3f ms (%.1f tok/s)\n"
                 "generated %lld tokens, stopped at %s\n",
                 static_cast<long long>(stats.prompt_tokens),
                 stats.prefill_seconds * 1e3,
                 rate(stats.prompt_tokens, stats.prefill_seconds),
                 static_cast<long long>(stats.decode_calls),
                 stats.decode_seconds * 1e3,
                 rate(stats.decode_calls, stats.decode_seconds),
                 static_cast<long long>(stats.generated_tokens),
                 reasons[stats.stop_reason]);
  }
  return 0;
}

} // namespace

int llmcRunMain(int argc, char **argv) {
  try {
    RunOptions opts = parseRunOptions(argc, argv);
    if (opts.help) {
      std::fputs(kRunUsage, stdout);
      return 0;
    }
    return run(opts);
  } catch (const std::exception &e) {
    return reportError(e.what());
  }
}

int llmcDevicesMain(int argc, char **argv) {
  if (argc != 1) {
    std::fprintf(stderr, "usage: llmc devices\n");
    return 1;
  }
  char *list = nullptr, *error = nullptr;
  if (llmc_list_devices(&list, &error) != 0) {
    std::fprintf(stderr, "llmc: error: %s\n", error ? error : "unknown");
    llmc_string_free(error);
    return 1;
  }
  // Each device, then the target description to compile for it: the one
  // `--target vulkan` resolves to on a Vulkan device, cuda:sm_NN on a CUDA
  // one ("cuda N: NAME (sm_NN, ...)").
  std::string lines = list;
  llmc_string_free(list);
  if (lines.empty()) {
    std::fputs("no Vulkan or CUDA device\n", stdout);
    return 1;
  }
  int32_t index = 0;
  for (size_t at = 0; at < lines.size();) {
    size_t end = lines.find('\n', at);
    std::string line = lines.substr(at, end - at);
    at = end == std::string::npos ? lines.size() : end + 1;
    if (line.rfind("cuda ", 0) == 0) {
      size_t sm = line.find("(sm_");
      std::string arch =
          sm == std::string::npos
              ? std::string()
              : line.substr(sm + 1, line.find_first_of(",)", sm) - sm - 1);
      // ", N SMs)": the device's compute units.
      size_t smsAt = line.rfind(" SMs)");
      size_t count = smsAt == std::string::npos
                         ? std::string::npos
                         : line.find_last_of(' ', smsAt - 1);
      std::string cores =
          count == std::string::npos
              ? std::string()
              : ",cores=" + line.substr(count + 1, smsAt - count - 1);
      std::printf("%s\n   --target cuda:%s%s\n", line.c_str(), arch.c_str(),
                  cores.c_str());
      continue;
    }
    char *description = nullptr;
    if (llmc_describe_device(index, &description, &error) != 0) {
      std::fprintf(stderr, "llmc: error: %s\n", error ? error : "unknown");
      llmc_string_free(error);
      return 1;
    }
    std::printf("%s\n   --target %s\n", line.c_str(), description);
    llmc_string_free(description);
    ++index;
  }
  return 0;
}
