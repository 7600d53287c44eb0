//===- CudaDriver.h - the CUDA driver API entry points llmc calls -*- C++
//-*-===//
//
// The runtime opens the CUDA driver (libcuda.so.1) at run time, so that a
// CPU-only install needs neither CUDA's headers nor its library. These are
// the few types, constants and entry points it uses, declared as the driver
// API defines them (cuda.h of CUDA 12 and 13; the unit test
// CudaDriverTest checks every layout and value against the real header
// where the toolkit is installed). Versioned entry points are looked up by
// their versioned names, with the older name as the fallback where the
// newer takes the same arguments.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SRC_CUDADRIVER_H
#define LLMC_RUNTIME_SRC_CUDADRIVER_H

#include <cstddef>
#include <string>

namespace llmc::rt::cu {

using Result = int;
using Device = int;
using DevicePtr = unsigned long long;
using Context = struct CUctx_st *;
using Module = struct CUmod_st *;
using Function = struct CUfunc_st *;
using Stream = struct CUstream_st *;
using Event = struct CUevent_st *;
using Graph = struct CUgraph_st *;
using GraphExec = struct CUgraphExec_st *;
using GraphNode = struct CUgraphNode_st *;

// CUresult values llmc names in messages or acts on.
constexpr Result SUCCESS = 0;
constexpr Result ERROR_INVALID_VALUE = 1;
constexpr Result ERROR_STUB_LIBRARY = 34;
constexpr Result ERROR_NO_DEVICE = 100;
constexpr Result ERROR_INVALID_IMAGE = 200;
constexpr Result ERROR_NO_BINARY_FOR_GPU = 209;
constexpr Result ERROR_INVALID_PTX = 218;
constexpr Result ERROR_UNSUPPORTED_PTX_VERSION = 222;

// CUdevice_attribute values.
constexpr int ATTR_MAX_THREADS_PER_BLOCK = 1;
constexpr int ATTR_MAX_GRID_DIM_X = 5;
constexpr int ATTR_MAX_GRID_DIM_Y = 6;
constexpr int ATTR_MAX_GRID_DIM_Z = 7;
constexpr int ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int ATTR_WARP_SIZE = 10;
constexpr int ATTR_MULTIPROCESSOR_COUNT = 16;
constexpr int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int ATTR_COMPUTE_CAPABILITY_MINOR = 76;

// CUfunction_attribute values.
constexpr int FUNC_ATTR_MAX_THREADS_PER_BLOCK = 0;

// CUdevice_attribute values of the block's axes.
constexpr int ATTR_MAX_BLOCK_DIM_X = 2;
constexpr int ATTR_MAX_BLOCK_DIM_Y = 3;
constexpr int ATTR_MAX_BLOCK_DIM_Z = 4;

// CUjit_option values (cuModuleLoadDataEx).
constexpr int JIT_ERROR_LOG_BUFFER = 5;
constexpr int JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// CUmemorytype.
constexpr int MEMORYTYPE_DEVICE = 2;

// CUstreamCaptureMode: relaxed (a library's set-up calls during a capture
// are not refused).
constexpr int STREAM_CAPTURE_MODE_RELAXED = 2;

/// CUgraphEdgeData: a programmatic edge (from the upstream kernel's
/// CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC, type
/// CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC) lets the downstream kernel start
/// once every workgroup of the upstream one has triggered or ended.
struct GraphEdgeData {
  unsigned char fromPort = 0, toPort = 0, type = 0;
  unsigned char reserved[5] = {};
};
constexpr unsigned char GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC = 1;
constexpr unsigned char GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1;

/// CUDA_KERNEL_NODE_PARAMS_v2 (the v1 struct is its first ten fields, so
/// a v1 entry point reads it as its own).
struct KernelNodeParams {
  Function func = nullptr;
  unsigned gridDimX = 1, gridDimY = 1, gridDimZ = 1;
  unsigned blockDimX = 1, blockDimY = 1, blockDimZ = 1;
  unsigned sharedMemBytes = 0;
  void **kernelParams = nullptr;
  void **extra = nullptr;
  void *kern = nullptr;
  Context ctx = nullptr;
};

/// CUDA_MEMCPY3D (v2): llmc fills the device-to-device fields only.
struct Memcpy3D {
  size_t srcXInBytes = 0, srcY = 0, srcZ = 0, srcLOD = 0;
  int srcMemoryType = 0;
  const void *srcHost = nullptr;
  DevicePtr srcDevice = 0;
  void *srcArray = nullptr;
  void *reserved0 = nullptr;
  size_t srcPitch = 0, srcHeight = 0;
  size_t dstXInBytes = 0, dstY = 0, dstZ = 0, dstLOD = 0;
  int dstMemoryType = 0;
  void *dstHost = nullptr;
  DevicePtr dstDevice = 0;
  void *dstArray = nullptr;
  void *reserved1 = nullptr;
  size_t dstPitch = 0, dstHeight = 0;
  size_t WidthInBytes = 0, Height = 0, Depth = 0;
};

/// The driver's entry points, loaded at run time (Driver::load).
struct Driver {
  Result (*Init)(unsigned) = nullptr;
  Result (*DriverGetVersion)(int *) = nullptr;
  Result (*GetErrorName)(Result, const char **) = nullptr;
  Result (*GetErrorString)(Result, const char **) = nullptr;
  Result (*DeviceGetCount)(int *) = nullptr;
  Result (*DeviceGet)(Device *, int) = nullptr;
  Result (*DeviceGetName)(char *, int, Device) = nullptr;
  Result (*DeviceGetAttribute)(int *, int, Device) = nullptr;
  Result (*DeviceTotalMem)(size_t *, Device) = nullptr;
  Result (*DevicePrimaryCtxRetain)(Context *, Device) = nullptr;
  Result (*DevicePrimaryCtxRelease)(Device) = nullptr;
  Result (*CtxSetCurrent)(Context) = nullptr;
  Result (*ModuleLoadDataEx)(Module *, const void *, unsigned, int *,
                             void **) = nullptr;
  Result (*ModuleUnload)(Module) = nullptr;
  Result (*ModuleGetFunction)(Function *, Module, const char *) = nullptr;
  /// Optional (drivers of CUDA 12.4 on): the offset and size of a kernel's
  /// parameter; nullptr where the driver lacks it.
  Result (*FuncGetParamInfo)(Function, size_t, size_t *, size_t *) = nullptr;
  Result (*FuncGetAttribute)(int *, int, Function) = nullptr;
  Result (*MemAlloc)(DevicePtr *, size_t) = nullptr;
  Result (*MemFree)(DevicePtr) = nullptr;
  Result (*MemcpyHtoD)(DevicePtr, const void *, size_t) = nullptr;
  Result (*MemcpyDtoH)(void *, DevicePtr, size_t) = nullptr;
  Result (*MemcpyHtoDAsync)(DevicePtr, const void *, size_t, Stream) = nullptr;
  Result (*MemcpyDtoDAsync)(DevicePtr, DevicePtr, size_t, Stream) = nullptr;
  Result (*MemsetD8)(DevicePtr, unsigned char, size_t) = nullptr;
  Result (*StreamCreate)(Stream *, unsigned) = nullptr;
  Result (*StreamDestroy)(Stream) = nullptr;
  Result (*StreamSynchronize)(Stream) = nullptr;
  Result (*LaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned,
                         unsigned, unsigned, unsigned, Stream, void **,
                         void **) = nullptr;
  Result (*EventCreate)(Event *, unsigned) = nullptr;
  Result (*EventDestroy)(Event) = nullptr;
  Result (*EventRecord)(Event, Stream) = nullptr;
  Result (*EventSynchronize)(Event) = nullptr;
  Result (*EventElapsedTime)(float *, Event, Event) = nullptr;
  Result (*GraphCreate)(Graph *, unsigned) = nullptr;
  Result (*GraphDestroy)(Graph) = nullptr;
  Result (*GraphAddKernelNode)(GraphNode *, Graph, const GraphNode *, size_t,
                               const KernelNodeParams *) = nullptr;
  Result (*GraphAddMemcpyNode)(GraphNode *, Graph, const GraphNode *, size_t,
                               const Memcpy3D *, Context) = nullptr;
  /// cuGraphAddDependencies_v2 (CUDA 12.3): null on an older driver.
  Result (*GraphAddDependencies)(Graph, const GraphNode *, const GraphNode *,
                                 const GraphEdgeData *, size_t) = nullptr;
  Result (*GraphInstantiateWithFlags)(GraphExec *, Graph,
                                      unsigned long long) = nullptr;
  Result (*GraphExecDestroy)(GraphExec) = nullptr;
  Result (*GraphLaunch)(GraphExec, Stream) = nullptr;
  Result (*GraphExecKernelNodeSetParams)(GraphExec, GraphNode,
                                         const KernelNodeParams *) = nullptr;
  Result (*GraphExecMemcpyNodeSetParams)(GraphExec, GraphNode, const Memcpy3D *,
                                         Context) = nullptr;
  /// A library's work (cuBLAS) in a graph: captured from a stream, then a
  /// child graph node.
  Result (*StreamBeginCapture)(Stream, int) = nullptr;
  Result (*StreamEndCapture)(Stream, Graph *) = nullptr;
  Result (*GraphAddChildGraphNode)(GraphNode *, Graph, const GraphNode *,
                                   size_t, Graph) = nullptr;

  /// Opens the driver (LLMC_CUDA_DRIVER, else libcuda.so.1) and looks up
  /// every entry point, then cuInit. Throws Error naming what is missing
  /// (no driver, a stub library, no device).
  void load();
  /// "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string describe(Result r, const char *what) const;
  /// Throws Error("cuda: " + describe(r, what)) unless r is SUCCESS.
  void check(Result r, const char *what) const;

  void *handle = nullptr;
};

/// cuBLAS (libcublas.so of CUDA 12 or 13), opened at run time only for an
/// artifact whose dispatch program calls it (`+cublas`): the handle, its
/// stream and workspace, and cublasGemmEx. Types and values as cublas_api.h
/// and library_types.h define them (checked in CudaDriverTest).
using BlasHandle = struct cublasContext *;
using BlasStatus = int;
constexpr BlasStatus BLAS_STATUS_SUCCESS = 0;
constexpr int BLAS_OP_N = 0, BLAS_OP_T = 1;   // cublasOperation_t
constexpr int DATA_R_32F = 0, DATA_R_16F = 2; // cudaDataType
constexpr int BLAS_COMPUTE_32F = 68;          // cublasComputeType_t
constexpr int BLAS_GEMM_DEFAULT = -1;         // cublasGemmAlgo_t

struct Blas {
  BlasStatus (*Create)(BlasHandle *) = nullptr;
  BlasStatus (*Destroy)(BlasHandle) = nullptr;
  BlasStatus (*SetStream)(BlasHandle, Stream) = nullptr;
  BlasStatus (*SetWorkspace)(BlasHandle, void *, size_t) = nullptr;
  BlasStatus (*GemmEx)(BlasHandle, int, int, int, int, int, const void *,
                       const void *, int, int, const void *, int, int,
                       const void *, void *, int, int, int, int) = nullptr;
  /// Optional: the status's name ("CUBLAS_STATUS_NOT_SUPPORTED").
  const char *(*GetStatusName)(BlasStatus) = nullptr;

  /// Opens cuBLAS (LLMC_CUBLAS, else libcublas.so.13, .so.12, .so) and
  /// looks up every entry point. Throws Error naming what is missing.
  void load();
  /// Throws Error("cuda: cuBLAS " + what + ": " + status) unless r is
  /// BLAS_STATUS_SUCCESS.
  void check(BlasStatus r, const char *what) const;

  void *handle = nullptr;
};

} // namespace llmc::rt::cu

#endif // LLMC_RUNTIME_SRC_CUDADRIVER_H
