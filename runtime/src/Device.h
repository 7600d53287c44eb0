//===- Device.h - a GPU behind the model's forward call ---------*- C++ -*-===//
//
// What the model asks of a GPU (Vulkan, CUDA): one forward call from the
// artifact's dispatch program, per-kernel times when profiling, and the read
// bandwidth its decode is measured against. Each device holds the weights'
// copy, the KV cache and the arena in its own memory.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SRC_DEVICE_H
#define LLMC_RUNTIME_SRC_DEVICE_H

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace llmc::rt {

class Device {
public:
  virtual ~Device() = default;

  /// One forward call (llmc/abi.h's contract): n tokens at pos0, the last
  /// `rows` rows of logits into `logits`.
  virtual void forward(const int32_t *tokens, int64_t n, int64_t pos0,
                       float *logits, int64_t rows) = 0;

  /// Times every step of the forward calls from now on (an artifact
  /// compiled with `llmc compile --profile`). Throws Error where the device
  /// cannot.
  virtual void enableProfile() = 0;
  /// The time one kind of step took since the last resetProfile().
  struct StepTime {
    int64_t calls = 0;
    int64_t nanoseconds = 0;
  };
  /// Per device kernel (metadata device.kernels), then one entry for the
  /// buffer copies; empty unless enableProfile() was called.
  virtual const std::vector<StepTime> &profile() const = 0;
  virtual void resetProfile() = 0;

  /// The device memory's read bandwidth in bytes per second, the best of
  /// `passes` over `bytes`.
  virtual double readBandwidth(int64_t bytes, int passes) = 0;
};

/// The device number LLMC_DEVICE names (else 0), among the devices of the
/// artifact's kind. Throws Error for a malformed value.
int deviceIndex();

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_DEVICE_H
