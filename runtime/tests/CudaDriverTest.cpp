//===- CudaDriverTest.cpp - the CUDA driver declarations and ABI --------===//
//
// The runtime declares the driver API it calls itself (CudaDriver.h: a
// CPU-only install needs no CUDA header). Where the toolkit's cuda.h is
// there (LLMC_HAVE_CUDA_H), every layout and value is checked against it;
// the kernels' parameters as the dispatch program's launches lay them out
// are checked everywhere.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"
#include "CudaDevice.h"

#include <gtest/gtest.h>

#include <cstddef>

#ifdef LLMC_HAVE_CUDA_H
#include <cuda.h>
#if __has_include(<cublas_api.h>)
#include <cublas_api.h>
#define LLMC_HAVE_CUBLAS_H
#endif

#include <type_traits>

namespace cu = llmc::rt::cu;

#define SAME_FIELD(ours, theirs, field)                                        \
  static_assert(offsetof(ours, field) == offsetof(theirs, field),              \
                #field " is misplaced")

static_assert(sizeof(cu::KernelNodeParams) ==
              sizeof(CUDA_KERNEL_NODE_PARAMS_v2));
SAME_FIELD(cu::KernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, func);
SAME_FIELD(cu::KernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, gridDimX);
SAME_FIELD(cu::KernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, blockDimZ);
SAME_FIELD(cu::KernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, sharedMemBytes);
SAME_FIELD(cu::KernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, kernelParams);
SAME_FIELD(cu::KernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, extra);
SAME_FIELD(cu::KernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, kern);
SAME_FIELD(cu::KernelNodeParams, CUDA_KERNEL_NODE_PARAMS_v2, ctx);
// The v1 struct is the v2 struct's prefix (the fallback entry points).
static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v1) ==
              offsetof(CUDA_KERNEL_NODE_PARAMS_v2, kern));

static_assert(sizeof(cu::Memcpy3D) == sizeof(CUDA_MEMCPY3D_v2));
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, srcMemoryType);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, srcDevice);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, reserved0);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, srcHeight);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, dstXInBytes);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, dstMemoryType);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, dstDevice);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, reserved1);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, WidthInBytes);
SAME_FIELD(cu::Memcpy3D, CUDA_MEMCPY3D_v2, Depth);

static_assert(sizeof(cu::DevicePtr) == sizeof(CUdeviceptr));
static_assert(sizeof(cu::Device) == sizeof(CUdevice));
static_assert(sizeof(cu::Result) == sizeof(CUresult));
static_assert(cu::ERROR_INVALID_VALUE == CUDA_ERROR_INVALID_VALUE);
static_assert(cu::ERROR_STUB_LIBRARY == CUDA_ERROR_STUB_LIBRARY);
static_assert(cu::ERROR_NO_DEVICE == CUDA_ERROR_NO_DEVICE);
static_assert(cu::ERROR_INVALID_IMAGE == CUDA_ERROR_INVALID_IMAGE);
static_assert(cu::ERROR_NO_BINARY_FOR_GPU == CUDA_ERROR_NO_BINARY_FOR_GPU);
static_assert(cu::ERROR_INVALID_PTX == CUDA_ERROR_INVALID_PTX);
static_assert(cu::ERROR_UNSUPPORTED_PTX_VERSION ==
              CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
static_assert(cu::ATTR_MAX_THREADS_PER_BLOCK ==
              CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
static_assert(cu::ATTR_MAX_GRID_DIM_X == CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
static_assert(cu::ATTR_MAX_GRID_DIM_Y == CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
static_assert(cu::ATTR_MAX_GRID_DIM_Z == CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
static_assert(cu::ATTR_MAX_SHARED_MEMORY_PER_BLOCK ==
              CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
static_assert(cu::ATTR_WARP_SIZE == CU_DEVICE_ATTRIBUTE_WARP_SIZE);
static_assert(cu::ATTR_MULTIPROCESSOR_COUNT ==
              CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(cu::ATTR_COMPUTE_CAPABILITY_MAJOR ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(cu::ATTR_COMPUTE_CAPABILITY_MINOR ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(cu::ATTR_MAX_BLOCK_DIM_X == CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
static_assert(cu::ATTR_MAX_BLOCK_DIM_Y == CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
static_assert(cu::ATTR_MAX_BLOCK_DIM_Z == CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
static_assert(cu::FUNC_ATTR_MAX_THREADS_PER_BLOCK ==
              CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
static_assert(cu::JIT_ERROR_LOG_BUFFER == CU_JIT_ERROR_LOG_BUFFER);
static_assert(cu::JIT_ERROR_LOG_BUFFER_SIZE_BYTES ==
              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
static_assert(cu::MEMORYTYPE_DEVICE == CU_MEMORYTYPE_DEVICE);
static_assert(cu::STREAM_CAPTURE_MODE_RELAXED ==
              CU_STREAM_CAPTURE_MODE_RELAXED);
// cuBLAS's (cublas_api.h, library_types.h).
#ifdef LLMC_HAVE_CUBLAS_H
static_assert(cu::BLAS_STATUS_SUCCESS == CUBLAS_STATUS_SUCCESS);
static_assert(cu::BLAS_OP_N == CUBLAS_OP_N && cu::BLAS_OP_T == CUBLAS_OP_T);
static_assert(cu::DATA_R_32F == CUDA_R_32F && cu::DATA_R_16F == CUDA_R_16F);
static_assert(cu::BLAS_COMPUTE_32F == CUBLAS_COMPUTE_32F);
static_assert(cu::BLAS_GEMM_DEFAULT == CUBLAS_GEMM_DEFAULT);
static_assert(sizeof(cu::BlasStatus) == sizeof(cublasStatus_t));
// cublasGemmEx as the header declares it, its enums passed as int (each
// the size of one): our pointer type takes the same arguments in order
// (the cast compiles only where the header declares exactly this).
[[maybe_unused]] static auto *const kHeaderGemmEx =
    static_cast<cublasStatus_t (*)(
        cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
        const void *, const void *, cudaDataType, int, const void *,
        cudaDataType, int, const void *, void *, cudaDataType, int,
        cublasComputeType_t, cublasGemmAlgo_t)>(&::cublasGemmEx);
static_assert(sizeof(cublasOperation_t) == sizeof(int) &&
              sizeof(cudaDataType) == sizeof(int) &&
              sizeof(cublasComputeType_t) == sizeof(int) &&
              sizeof(cublasGemmAlgo_t) == sizeof(int));
#endif

TEST(CudaDriverTest, DeclarationsMatchTheToolkitsHeader) {
  SUCCEED() << "checked at compile time against cuda.h";
}
#else
TEST(CudaDriverTest, DeclarationsMatchTheToolkitsHeader) {
  GTEST_SKIP() << "no cuda.h (the CUDA toolkit) to check the declarations "
                  "against";
}
#endif

namespace {

using llmc::rt::ArtifactMetadata;

ArtifactMetadata::DeviceArg buffer() {
  ArtifactMetadata::DeviceArg a;
  a.scalar = false;
  a.buffer = "arena";
  return a;
}

ArtifactMetadata::DeviceArg scalar() {
  ArtifactMetadata::DeviceArg a;
  a.scalar = true;
  return a;
}

} // namespace

// As the CUDA kernels take them (the PTX of `cuda-codegen.mlir`): a buffer
// is a memref descriptor (two 8-byte addresses, then offset, size and
// stride as 4-byte integers), a scalar 4 bytes; in the launch's order.
TEST(CudaDriverTest, LaunchParametersFollowTheKernelABI) {
  ArtifactMetadata::Launch l;
  l.args = {scalar(), buffer(), scalar(), buffer()};
  std::vector<size_t> sizes;
  std::vector<uint64_t> values;
  llmc::rt::cudaLaunchParams(l, {0x1000, 0x2040}, {256, int64_t(1) << 33},
                             {7, -1}, sizes, values);
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 8, 8, 4, 4, 4, 4, 8, 8, 4, 4, 4}));
  EXPECT_EQ(values,
            (std::vector<uint64_t>{7, 0x1000, 0x1000, 0, 256, 1, 0xffffffffu,
                                   0x2040, 0x2040, 0, 0x7fffffffu, 1}));
}
