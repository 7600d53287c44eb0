//===- Commands.h - Entry points of llmc run and bench ---------*- C++ -*-===//
//-*-===//
//
// `llmc run` and `llmc bench` execute compiled artifacts through the runtime's
// C++ API only, so they link without MLIR or LLVM. The llmc driver dispatches
// to them with argv[0] set to the subcommand name.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_TOOLS_LLMC_COMMANDS_H
#define LLMC_TOOLS_LLMC_COMMANDS_H

/// `llmc run DIR [options]`: generates text from an artifact. Prints only the
/// generated text (or ids) on stdout; errors go to stderr as
/// "llmc: error: <file or option>: <message>". Returns the exit code (0 or 1).
int llmcRunMain(int argc, char **argv);

/// `llmc bench DIR [options]`: measures prefill and decode throughput with
/// synthetic tokens. Returns the exit code (0 or 1).
int llmcBenchMain(int argc, char **argv);

/// `llmc tokenize FILE [options]`: encodes/decodes with the tokenizer of an
/// artifact or model file and prints JSON. Unlike run and bench it converts
/// model tokenizers with the compiler's importer, so it lives in the llmc
/// driver itself (TokenizeCommand.cpp), not in llmc_cli_run.
int llmcTokenizeMain(int argc, char **argv);

int llmcTuneMain(int argc, char **argv);

/// `llmc devices`: the Vulkan devices (`--target vulkan`, LLMC_DEVICE).
int llmcDevicesMain(int argc, char **argv);

#include <string>

/// Kilobytes of this process's resident pages of mappings of `file`
/// (/proc/self/smaps), or -1 where /proc is unavailable: a weights file's
/// share of memory, for bench and run --verbose.
long long residentKiB(const std::string &file);

#endif // LLMC_TOOLS_LLMC_COMMANDS_H
