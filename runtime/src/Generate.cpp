//===- Generate.cpp - The prefill/decode generation loop --------*- C++ -*-===//
//
// The last generated token is never fed back: its logits would be unused, and
// skipping it lets a generation fill the context exactly (as llama2.c does).
//
//===----------------------------------------------------------------------===//

#include "Generate.h"

#include <chrono>
#include <vector>

namespace llmc::rt {

static double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

llmc_generate_stats generate(Model &model, Sampler &sampler,
                             const int32_t *prompt, int64_t numPrompt,
                             int64_t maxTokens,
                             const llmc_generate_callbacks *callbacks) {
  llmc_generate_stats stats = {};
  stats.stop_reason = LLMC_STOP_MAX_TOKENS;
  if (numPrompt < 1 || !prompt)
    throw Error("generate: the prompt is empty (it needs at least one token)");
  if (numPrompt > model.maxSeqLen())
    throw Error("generate: the prompt has " + std::to_string(numPrompt) +
                " tokens but max_seq_len is " +
                std::to_string(model.maxSeqLen()));
  if (maxTokens < 0)
    throw Error("generate: max_tokens must be >= 0, got " +
                std::to_string(maxTokens));
  llmc_generate_callbacks none = {};
  const llmc_generate_callbacks &cb = callbacks ? *callbacks : none;
  const int64_t vocab = model.vocabSize();

  model.reset();
  // Every prompt row's logits only for a caller that reads them; sampling
  // needs the last row alone, which is all the compiled code then computes.
  const int64_t promptRows = cb.on_prompt_logits ? numPrompt : 1;
  std::vector<float> promptLogits(static_cast<size_t>(promptRows * vocab));
  auto start = std::chrono::steady_clock::now();
  model.forward(prompt, numPrompt, 0, promptLogits.data(), promptRows);
  stats.prefill_seconds = secondsSince(start);
  stats.prompt_tokens = numPrompt;
  if (cb.on_prompt_logits &&
      cb.on_prompt_logits(cb.user, promptLogits.data(), numPrompt, vocab)) {
    stats.stop_reason = LLMC_STOP_CALLBACK;
    return stats;
  }

  const float *logits = promptLogits.data() + (promptRows - 1) * vocab;
  std::vector<float> stepLogits(static_cast<size_t>(vocab));
  int64_t pos = numPrompt; // where the next fed-back token goes
  while (stats.generated_tokens < maxTokens) {
    int32_t token = sampler.sample(logits);
    ++stats.generated_tokens;
    if (cb.on_token && cb.on_token(cb.user, token, logits, vocab)) {
      stats.stop_reason = LLMC_STOP_CALLBACK;
      break;
    }
    if (model.isEos(token)) {
      stats.stop_reason = LLMC_STOP_EOS;
      break;
    }
    if (stats.generated_tokens == maxTokens)
      break;
    if (pos >= model.maxSeqLen()) {
      stats.stop_reason = LLMC_STOP_MAX_SEQ_LEN;
      break;
    }
    start = std::chrono::steady_clock::now();
    model.forward(&token, 1, pos, stepLogits.data());
    stats.decode_seconds += secondsSince(start);
    ++stats.decode_calls;
    ++pos;
    logits = stepLogits.data();
  }
  return stats;
}

} // namespace llmc::rt
