//===- Generate.h - The prefill/decode generation loop ----------*- C++ -*-===//
//
// One definition of "generate" for every caller (llmc run, bench, embedders),
// so that the stop rules and the prefill-in-one-call contract cannot drift.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_GENERATE_H
#define LLMC_RUNTIME_SRC_GENERATE_H

#include "Model.h"
#include "Sampler.h"

#include "llmc/runtime.h"

namespace llmc::rt {

/// See llmc_generate(). Throws Error; `callbacks` may be null.
llmc_generate_stats generate(Model &model, Sampler &sampler,
                             const int32_t *prompt, int64_t numPrompt,
                             int64_t maxTokens,
                             const llmc_generate_callbacks *callbacks);

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_GENERATE_H
