//===- llmc-run.cpp - the runtime's own driver: run, bench, devices -------===//
//
// `llmc run`, `llmc bench` and `llmc devices` on compiled artifacts, without
// the compiler: this executable links the runtime (llmc_cli_run) and nothing
// of MLIR or LLVM, so it is what a machine that only runs artifacts installs
// (a GPU host given an artifact compiled elsewhere, say). `llmc` itself also
// compiles a model file given in place of an artifact; llmc-run refuses one.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>

static const char *kUsage =
    "usage:\n"
    "  llmc-run run DIR [options]     generate text (llmc run --help)\n"
    "  llmc-run bench DIR [options]   time prefill and decode (llmc bench "
    "--help)\n"
    "  llmc-run devices               the Vulkan and CUDA devices\n"
    "DIR is an artifact that `llmc compile` wrote; this runtime-only driver\n"
    "does not compile model files.\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "devices")
    return llmcDevicesMain(argc - 1, argv + 1);
  if (cmd == "run" || cmd == "bench") {
    // A model file where an artifact belongs: say what to do instead of
    // the runtime's "no metadata.json".
    if (argc > 2 && argv[2][0] != '-') {
      struct stat st;
      if (::stat(argv[2], &st) == 0 && !S_ISDIR(st.st_mode)) {
        std::fprintf(stderr,
                     "llmc-run: error: %s: a file, not an artifact directory "
                     "(compile it with `llmc compile %s -o DIR`)\n",
                     argv[2], argv[2]);
        return 1;
      }
    }
    return cmd == "run" ? llmcRunMain(argc - 1, argv + 1)
                        : llmcBenchMain(argc - 1, argv + 1);
  }
  std::fputs(kUsage, stderr);
  std::fprintf(stderr, "llmc-run: error: unknown command '%s'\n", cmd.c_str());
  return 1;
}
