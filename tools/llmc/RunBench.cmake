#===- tools/llmc/RunBench.cmake - The llmc run / bench subcommands --------===#
#
# Included by tools/llmc/CMakeLists.txt. `llmc run` and `llmc bench` depend on
# the runtime only (no MLIR/LLVM), so they form their own library that the
# llmc driver links; llmcRunMain/llmcBenchMain are declared in Commands.h.
#
#===----------------------------------------------------------------------===#

add_library(llmc_cli_run STATIC
  ${CMAKE_CURRENT_LIST_DIR}/RunCommand.cpp
  ${CMAKE_CURRENT_LIST_DIR}/BenchCommand.cpp)
target_include_directories(llmc_cli_run PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(llmc_cli_run PUBLIC llmc_runtime)
target_compile_features(llmc_cli_run PRIVATE cxx_std_17)
# `llmc bench --vs npm`: llama.cpp from npm, as the tests install it.
target_compile_definitions(llmc_cli_run PRIVATE
  LLMC_NPM_LLAMA_CPP_SCRIPT="${PROJECT_SOURCE_DIR}/test/oracles/llama_cpp.mjs")
# The runtime's C++ wrapper reports errors with exceptions; LLVM's build flags
# (-fno-exceptions -fno-rtti) must not reach these files.
target_compile_options(llmc_cli_run PRIVATE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-fexceptions -frtti>)

# llmc-run: run, bench and devices without the compiler (no MLIR or LLVM
# library), for machines that only run artifacts.
add_executable(llmc-run ${CMAKE_CURRENT_LIST_DIR}/llmc-run.cpp)
target_link_libraries(llmc-run PRIVATE llmc_cli_run)
target_compile_features(llmc-run PRIVATE cxx_std_17)
