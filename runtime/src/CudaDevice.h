//===- CudaDevice.h - run a CUDA artifact's dispatch program ----*- C++ -*-===//
//
// An NVIDIA GPU behind the model's forward call, on the CUDA driver API
// opened at run time (dlopen of libcuda.so.1: a CPU-only install needs no
// CUDA library). The kernels' module is loaded once (the SM's cubin, else
// the PTX, which the driver compiles), the weights are copied once into
// device memory, the KV cache and the arena live there. Each phase runs as
// one CUDA graph: built from the dispatch program the first time a phase
// runs with a given set of launches (a launch whose grid is empty at a size
// is left out), then replayed, only the nodes whose grid or arguments
// changed since the last call (a decode step's position, its token's row)
// updated in place (cuGraphExecKernelNodeSetParams). Profiling launches the
// kernels one by one between events instead.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SRC_CUDADEVICE_H
#define LLMC_RUNTIME_SRC_CUDADEVICE_H

#include "Device.h"
#include "Metadata.h"

#include <memory>
#include <string>
#include <vector>

namespace llmc::rt {

class CudaDevice : public Device {
public:
  /// Opens CUDA device `index` (LLMC_DEVICE, else 0) and loads the
  /// artifact's kernels and weights. Throws Error naming what is missing
  /// (the driver, a device, an SM the kernels can run on).
  static std::unique_ptr<CudaDevice>
  open(const ArtifactMetadata &md, const void *weights, int64_t weightBytes);
  ~CudaDevice() override;

  void forward(const int32_t *tokens, int64_t n, int64_t pos0, float *logits,
               int64_t rows) override;
  /// With CUDA events around every launch (no graphs while profiling).
  void enableProfile() override;
  const std::vector<StepTime> &profile() const override;
  void resetProfile() override;
  /// A device-to-device copy of `bytes`: the bytes it reads and writes per
  /// second, the best of `passes` timed by events.
  double readBandwidth(int64_t bytes, int passes) override;

  /// The CUDA devices the driver lists, one line each ("cuda 0: NVIDIA
  /// H100 (sm_90, 79.1 GiB, 132 SMs)"); empty where there is no driver.
  static std::vector<std::string> list();

  /// Device `index` as an llmc target description ("cuda:sm_90"): what the
  /// driver compiles for when told `--target cuda`. Throws Error.
  static std::string describe(int index);

  struct Impl;

private:
  explicit CudaDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// The kernel parameters of one launch as the CUDA ABI lays them out
/// (docs/artifact.md): per buffer binding a one-dimensional memref
/// descriptor (its address twice, then offset 0, its size and stride 1 as
/// 32-bit integers), per scalar a 32-bit integer. Appends to `sizes` the
/// bytes of each parameter and to `values` its value (addresses as
/// uint64, integers in the low 32 bits). Exposed for the unit tests.
void cudaLaunchParams(const ArtifactMetadata::Launch &launch,
                      const std::vector<uint64_t> &bindingAddresses,
                      const std::vector<int64_t> &bindingBytes,
                      const std::vector<int64_t> &scalars,
                      std::vector<size_t> &sizes,
                      std::vector<uint64_t> &values);

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_CUDADEVICE_H
