//===- VulkanDevice.h - run a Vulkan artifact's dispatch program -*- C++
//-*-===//
//
// A Vulkan device behind the model's forward call: the loader is opened at
// run time (dlopen of libvulkan.so.1, so a CPU-only install needs no Vulkan
// library), the weights are uploaded once into a device buffer, the KV
// cache and the arena live on the device, every kernel's pipeline is made
// once, and each phase's launches are recorded into a command buffer once
// per shape (the grid, offsets and sizes they evaluate to) and submitted
// again for every call; scalars (positions, token ids) are written into a
// host-visible buffer before each submission.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SRC_VULKANDEVICE_H
#define LLMC_RUNTIME_SRC_VULKANDEVICE_H

#include "Metadata.h"

#include <memory>
#include <string>
#include <vector>

namespace llmc::rt {

class VulkanDevice {
public:
  /// Opens device `index` (LLMC_DEVICE, else 0) and loads the artifact's
  /// kernels and weights. Throws Error naming what is missing.
  static std::unique_ptr<VulkanDevice>
  open(const ArtifactMetadata &md, const void *weights, int64_t weightBytes);
  ~VulkanDevice();

  /// One forward call (llmc/abi.h's contract): n tokens at pos0, the last
  /// `rows` rows of logits into `logits`.
  void forward(const int32_t *tokens, int64_t n, int64_t pos0, float *logits,
               int64_t rows);

  /// Times every step of the forward calls from now on with timestamp
  /// queries (an artifact compiled with `llmc compile --profile`). Throws
  /// Error when the device's queue keeps no timestamps.
  void enableProfile();
  /// The time one kind of step took since the last resetProfile().
  struct StepTime {
    int64_t calls = 0;
    int64_t nanoseconds = 0;
  };
  /// Per device kernel (metadata device.kernels), then one entry for the
  /// buffer copies; empty unless enableProfile() was called.
  const std::vector<StepTime> &profile() const;
  void resetProfile();

  /// The device memory's read bandwidth: bytes per second a compute kernel
  /// reads `bytes` at (16-byte loads, every thread of a grid-stride loop),
  /// the best of `passes` timed by the device's timestamps.
  double readBandwidth(int64_t bytes, int passes);

  /// The devices the loader lists, one line each ("0: llvmpipe (CPU,
  /// Vulkan 1.3)"). Throws Error when there is no loader.
  static std::vector<std::string> list();

  /// Device `index` as an llmc target description ("vulkan:1.3,+fp64,
  /// subgroup=8,workgroup=1024,shared=32768,range=134217728"): what the
  /// driver compiles for when told `--target vulkan`. Throws Error.
  static std::string describe(int index);

  struct Impl;

private:
  explicit VulkanDevice(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_VULKANDEVICE_H
