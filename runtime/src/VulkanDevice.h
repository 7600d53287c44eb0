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

#include "Device.h"
#include "Metadata.h"

#include <memory>
#include <string>
#include <vector>

namespace llmc::rt {

class VulkanDevice : public Device {
public:
  /// Opens device `index` (LLMC_DEVICE, else 0) and loads the artifact's
  /// kernels and weights. Throws Error naming what is missing.
  static std::unique_ptr<VulkanDevice>
  open(const ArtifactMetadata &md, const void *weights, int64_t weightBytes);
  ~VulkanDevice() override;

  void forward(const int32_t *tokens, int64_t n, int64_t pos0, float *logits,
               int64_t rows) override;

  /// With timestamp queries; throws Error when the device's queue keeps no
  /// timestamps.
  void enableProfile() override;
  const std::vector<StepTime> &profile() const override;
  void resetProfile() override;

  /// Bytes per second a compute kernel reads `bytes` at (16-byte loads,
  /// every thread of a grid-stride loop), timed by the device's timestamps.
  double readBandwidth(int64_t bytes, int passes) override;

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
