//===- CudaDevice.cpp - run a CUDA artifact's dispatch program ------------===//
#include "CudaDevice.h"
#include "CudaDriver.h"
#include "Error.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <type_traits>

namespace llmc::rt {

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

namespace cu {

std::string Driver::describe(Result r, const char *what) const {
  const char *name = nullptr, *text = nullptr;
  if (GetErrorName && GetErrorName(r, &name) != SUCCESS)
    name = nullptr;
  if (GetErrorString && GetErrorString(r, &text) != SUCCESS)
    text = nullptr;
  std::string s = std::string(what) + ": " +
                  (name ? name : "CUresult " + std::to_string(r));
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

void Driver::check(Result r, const char *what) const {
  if (r != SUCCESS)
    throw Error("cuda: " + describe(r, what));
}

void Driver::load() {
  if (handle)
    return;
  const char *path = std::getenv("LLMC_CUDA_DRIVER");
  if (!path || !*path)
    path = "libcuda.so.1";
  void *h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = ::dlerror();
    throw Error(std::string("cuda: cannot open the CUDA driver ") + path +
                ": " + (why ? why : "unknown error") +
                " (no NVIDIA driver on this machine; LLMC_CUDA_DRIVER names "
                "another)");
  }
  // The first name found; a required one missing is an error naming it.
  auto sym = [&](auto &fn, std::initializer_list<const char *> names,
                 bool required = true) {
    for (const char *name : names)
      if (void *p = ::dlsym(h, name)) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
        return;
      }
    if (required) {
      ::dlclose(h);
      throw Error(std::string("cuda: the driver ") + path + " has no " +
                  *names.begin() +
                  " (llmc needs a driver of CUDA 12 or newer)");
    }
  };
  sym(Init, {"cuInit"});
  sym(DriverGetVersion, {"cuDriverGetVersion"});
  sym(GetErrorName, {"cuGetErrorName"});
  sym(GetErrorString, {"cuGetErrorString"});
  sym(DeviceGetCount, {"cuDeviceGetCount"});
  sym(DeviceGet, {"cuDeviceGet"});
  sym(DeviceGetName, {"cuDeviceGetName"});
  sym(DeviceGetAttribute, {"cuDeviceGetAttribute"});
  sym(DeviceTotalMem, {"cuDeviceTotalMem_v2"});
  sym(DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  sym(DevicePrimaryCtxRelease,
      {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
  sym(CtxSetCurrent, {"cuCtxSetCurrent"});
  sym(ModuleLoadDataEx, {"cuModuleLoadDataEx"});
  sym(ModuleUnload, {"cuModuleUnload"});
  sym(ModuleGetFunction, {"cuModuleGetFunction"});
  sym(FuncGetParamInfo, {"cuFuncGetParamInfo"}, /*required=*/false);
  sym(FuncGetAttribute, {"cuFuncGetAttribute"});
  sym(MemAlloc, {"cuMemAlloc_v2"});
  sym(MemFree, {"cuMemFree_v2"});
  sym(MemcpyHtoD, {"cuMemcpyHtoD_v2"});
  sym(MemcpyDtoH, {"cuMemcpyDtoH_v2"});
  sym(MemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"});
  sym(MemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"});
  sym(MemsetD8, {"cuMemsetD8_v2"});
  sym(StreamCreate, {"cuStreamCreate"});
  sym(StreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"});
  sym(StreamSynchronize, {"cuStreamSynchronize"});
  sym(LaunchKernel, {"cuLaunchKernel"});
  sym(EventCreate, {"cuEventCreate"});
  sym(EventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
  sym(EventRecord, {"cuEventRecord"});
  sym(EventSynchronize, {"cuEventSynchronize"});
  sym(EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
  sym(GraphCreate, {"cuGraphCreate"});
  sym(GraphDestroy, {"cuGraphDestroy"});
  sym(GraphAddKernelNode, {"cuGraphAddKernelNode_v2", "cuGraphAddKernelNode"});
  sym(GraphAddMemcpyNode, {"cuGraphAddMemcpyNode"});
  sym(GraphAddDependencies, {"cuGraphAddDependencies_v2"}, /*required=*/false);
  sym(GraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"});
  sym(GraphExecDestroy, {"cuGraphExecDestroy"});
  sym(GraphLaunch, {"cuGraphLaunch"});
  sym(GraphExecKernelNodeSetParams,
      {"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams"});
  sym(GraphExecMemcpyNodeSetParams, {"cuGraphExecMemcpyNodeSetParams"});
  sym(StreamBeginCapture, {"cuStreamBeginCapture_v2"});
  sym(StreamEndCapture, {"cuStreamEndCapture"});
  sym(GraphAddChildGraphNode, {"cuGraphAddChildGraphNode"});
  handle = h;
  Result r = Init(0);
  if (r == ERROR_STUB_LIBRARY)
    throw Error(std::string("cuda: ") + path +
                " is the CUDA toolkit's stub library, not a driver "
                "(cuInit: CUDA_ERROR_STUB_LIBRARY)");
  if (r == ERROR_NO_DEVICE)
    throw Error("cuda: the driver finds no CUDA device "
                "(cuInit: CUDA_ERROR_NO_DEVICE)");
  check(r, "cuInit");
}

void Blas::load() {
  if (handle)
    return;
  std::vector<std::string> paths;
  if (const char *p = std::getenv("LLMC_CUBLAS"); p && *p)
    paths = {p};
  else
    paths = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  std::string tried;
  void *h = nullptr;
  for (const std::string &p : paths) {
    h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h)
      break;
    const char *why = ::dlerror();
    // (dlerror names the file.)
    tried += (tried.empty() ? "" : "; ") + (why ? std::string(why) : p);
  }
  if (!h)
    throw Error("cuda: the artifact calls cuBLAS (compiled with "
                "+cublas), and no cuBLAS library opens (" +
                tried +
                "; install the CUDA toolkit's cuBLAS, LLMC_CUBLAS names "
                "another, or compile without +cublas)");
  auto sym = [&](auto &fn, const char *name, bool required = true) {
    if (void *p = ::dlsym(h, name)) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
      return;
    }
    if (required) {
      ::dlclose(h);
      throw Error(std::string("cuda: the cuBLAS library has no ") + name +
                  " (llmc needs cuBLAS of CUDA 12 or newer)");
    }
  };
  sym(Create, "cublasCreate_v2");
  sym(Destroy, "cublasDestroy_v2");
  sym(SetStream, "cublasSetStream_v2");
  sym(SetWorkspace, "cublasSetWorkspace_v2");
  sym(GemmEx, "cublasGemmEx");
  sym(GetStatusName, "cublasGetStatusName", /*required=*/false);
  handle = h;
}

void Blas::check(BlasStatus r, const char *what) const {
  if (r == BLAS_STATUS_SUCCESS)
    return;
  const char *name = GetStatusName ? GetStatusName(r) : nullptr;
  throw Error(std::string("cuda: cuBLAS ") + what + ": " +
              (name ? name : "cublasStatus_t " + std::to_string(r)));
}

} // namespace cu

//===----------------------------------------------------------------------===//
// Kernel parameters
//===----------------------------------------------------------------------===//

void cudaLaunchParams(const ArtifactMetadata::Launch &launch,
                      const std::vector<uint64_t> &bindingAddresses,
                      const std::vector<int64_t> &bindingBytes,
                      const std::vector<int64_t> &scalars,
                      std::vector<size_t> &sizes,
                      std::vector<uint64_t> &values) {
  size_t binding = 0, scalar = 0;
  auto i32 = [&](int64_t v) {
    sizes.push_back(4);
    values.push_back(static_cast<uint32_t>(static_cast<int32_t>(v)));
  };
  for (const ArtifactMetadata::DeviceArg &a : launch.args) {
    if (a.scalar) {
      i32(scalars.at(scalar++));
      continue;
    }
    // memref<?xT>'s descriptor: allocated and aligned address, offset,
    // size (the binding's bytes; the kernels read their sizes from the
    // scalars after it), stride.
    uint64_t address = bindingAddresses.at(binding);
    int64_t bytes = bindingBytes.at(binding++);
    sizes.push_back(8);
    values.push_back(address);
    sizes.push_back(8);
    values.push_back(address);
    i32(0);
    i32(std::min<int64_t>(bytes, std::numeric_limits<int32_t>::max()));
    i32(1);
  }
}

//===----------------------------------------------------------------------===//
// The device
//===----------------------------------------------------------------------===//

namespace {

struct Buffer {
  cu::DevicePtr ptr = 0;
  int64_t bytes = 0;
};

/// A product of cuBLAS at one call (ArtifactMetadata::Gemm, evaluated).
struct GemmCall {
  cu::DevicePtr a = 0, b = 0, out = 0;
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  float alpha = 1, beta = 0;
  bool operator==(const GemmCall &o) const {
    return a == o.a && b == o.b && out == o.out && m == o.m && n == o.n &&
           k == o.k && lda == o.lda && ldb == o.ldb && ldc == o.ldc &&
           alpha == o.alpha && beta == o.beta;
  }
};

/// One entry of a phase at one call: a launch with its grid and parameter
/// values, a copy, or a product of cuBLAS.
struct Step {
  size_t entry = 0;  ///< index into the phase's launches
  size_t kernel = 0; ///< a launch's kernel
  bool copy = false;
  bool gemm = false;
  unsigned grid[3] = {1, 1, 1};
  std::vector<uint64_t> values; ///< kernel parameters, 8 bytes a slot
  cu::DevicePtr src = 0, dst = 0;
  int64_t bytes = 0;
  GemmCall call;
  bool operator==(const Step &o) const {
    return entry == o.entry && kernel == o.kernel && copy == o.copy &&
           gemm == o.gemm && std::equal(grid, grid + 3, o.grid) &&
           values == o.values && src == o.src && dst == o.dst &&
           bytes == o.bytes && call == o.call;
  }
};

/// cuBLAS's workspace (its recommendation for Hopper: 32 MiB), given to the
/// handle so that a captured product allocates nothing.
constexpr int64_t kBlasWorkspaceBytes = 32 << 20;

/// A phase's graph: the steps it was last given and its nodes.
struct PhaseGraph {
  std::vector<size_t> entries; ///< the launches it holds, in order
  std::vector<Step> steps;
  std::vector<cu::GraphNode> nodes;
  cu::Graph graph = nullptr;
  cu::GraphExec exec = nullptr;
};

} // namespace

struct CudaDevice::Impl {
  cu::Driver cu;
  const ArtifactMetadata *md = nullptr;
  cu::Device device = 0;
  cu::Context ctx = nullptr;
  bool retained = false;
  cu::Module module = nullptr;
  cu::Stream stream = nullptr;
  std::string name;
  int major = 0, minor = 0;
  int maxGrid[3] = {0, 0, 0};
  std::vector<cu::Function> functions;
  /// Whether each kernel's parameters were checked against the driver's
  /// view of the kernel (cuFuncGetParamInfo).
  std::vector<bool> checkedParams;
  Buffer weights, kv, arena, tokens, logits;
  PhaseGraph graphs[2]; // prefill, decode
  bool useGraphs = true;
  /// Whether the driver takes programmatic graph edges (false once it
  /// refuses one).
  bool programmaticEdges = true;
  bool profiling = false;
  std::vector<StepTime> times;
  std::vector<cu::Event> events;
  /// cuBLAS, for an artifact whose program calls it: the handle on
  /// `stream`, its workspace, and the stream its products are captured
  /// from into a graph.
  cu::Blas blas;
  cu::BlasHandle blasHandle = nullptr;
  Buffer blasWorkspace;
  cu::Stream captureStream = nullptr;

  ~Impl();
  void openDevice(int index);
  void loadModule();
  Buffer alloc(int64_t bytes, const char *what);
  void release(Buffer &b);
  void ensure(Buffer &b, int64_t bytes, const char *what);
  const Buffer &root(const std::string &name) const;
  void checkParams(size_t kernel, const std::vector<size_t> &sizes);
  void destroy(PhaseGraph &g);
  void runGraph(PhaseGraph &g, std::vector<Step> &steps);
  void runDirect(std::vector<Step> &steps,
                 const std::vector<ArtifactMetadata::Launch> &launches);
  cu::KernelNodeParams kernelParams(const Step &s,
                                    std::vector<void *> &pointers) const;
  cu::Memcpy3D copyParams(const Step &s) const;
  void openBlas();
  /// Puts the handle on `s` with the workspace (cublasSetStream resets the
  /// workspace to cuBLAS's own pool).
  void blasOn(cu::Stream s);
  /// Enqueues product `c` on the stream the handle is set to.
  void gemm(const GemmCall &c);
  /// Product `c` as a graph of its own (captured).
  cu::Graph captureGemm(const GemmCall &c);
};

CudaDevice::Impl::~Impl() {
  if (!cu.handle)
    return;
  if (ctx)
    cu.CtxSetCurrent(ctx);
  // Work a failed call left queued finishes before its memory goes.
  if (stream)
    cu.StreamSynchronize(stream);
  for (PhaseGraph &g : graphs)
    destroy(g);
  for (cu::Event e : events)
    cu.EventDestroy(e);
  if (blasHandle)
    blas.Destroy(blasHandle);
  if (captureStream)
    cu.StreamDestroy(captureStream);
  for (Buffer *b : {&weights, &kv, &arena, &tokens, &logits, &blasWorkspace})
    release(*b);
  if (stream)
    cu.StreamDestroy(stream);
  if (module)
    cu.ModuleUnload(module);
  if (retained) {
    // Not left current once released (the thread's later CUDA calls would
    // find a reset context).
    cu.CtxSetCurrent(nullptr);
    cu.DevicePrimaryCtxRelease(device);
  }
}

void CudaDevice::Impl::openDevice(int index) {
  int count = 0;
  cu.check(cu.DeviceGetCount(&count), "cuDeviceGetCount");
  if (index >= count)
    throw Error("cuda: no device " + std::to_string(index) + " (the driver " +
                "lists " + std::to_string(count) + "; LLMC_DEVICE picks one)");
  cu.check(cu.DeviceGet(&device, index), "cuDeviceGet");
  char buf[256] = {0};
  cu.check(cu.DeviceGetName(buf, sizeof(buf) - 1, device), "cuDeviceGetName");
  name = buf;
  auto attr = [&](int a) {
    int v = 0;
    cu.check(cu.DeviceGetAttribute(&v, a, device), "cuDeviceGetAttribute");
    return v;
  };
  major = attr(cu::ATTR_COMPUTE_CAPABILITY_MAJOR);
  minor = attr(cu::ATTR_COMPUTE_CAPABILITY_MINOR);
  maxGrid[0] = attr(cu::ATTR_MAX_GRID_DIM_X);
  maxGrid[1] = attr(cu::ATTR_MAX_GRID_DIM_Y);
  maxGrid[2] = attr(cu::ATTR_MAX_GRID_DIM_Z);
  int warp = attr(cu::ATTR_WARP_SIZE);
  int maxThreads = attr(cu::ATTR_MAX_THREADS_PER_BLOCK);
  int maxBlock[3] = {attr(cu::ATTR_MAX_BLOCK_DIM_X),
                     attr(cu::ATTR_MAX_BLOCK_DIM_Y),
                     attr(cu::ATTR_MAX_BLOCK_DIM_Z)};
  for (const ArtifactMetadata::DeviceKernel &k : md->deviceKernels) {
    if (k.subgroup && k.subgroup != warp)
      throw Error("cuda: kernel " + k.name +
                  " was scheduled for subgroups of " +
                  std::to_string(k.subgroup) + " threads; " + name +
                  "'s warps have " + std::to_string(warp));
    for (int a = 0; a < 3; ++a)
      if (k.workgroup[a] > maxBlock[a])
        throw Error("cuda: kernel " + k.name + " runs workgroups of " +
                    std::to_string(k.workgroup[a]) + " threads on axis " +
                    "xyz"[a] + "; " + name + " runs at most " +
                    std::to_string(maxBlock[a]));
    if (k.workgroup[0] * k.workgroup[1] * k.workgroup[2] > maxThreads)
      throw Error(
          "cuda: kernel " + k.name + " runs workgroups of " +
          std::to_string(k.workgroup[0] * k.workgroup[1] * k.workgroup[2]) +
          " threads; " + name + " runs at most " + std::to_string(maxThreads));
  }
  cu.check(cu.DevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain");
  retained = true;
  cu.check(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent");
  cu.check(cu.StreamCreate(&stream, 0), "cuStreamCreate");
}

/// "sm_90" -> 90.
static int smNumber(const std::string &arch) {
  return std::atoi(arch.c_str() + 3);
}

void CudaDevice::Impl::loadModule() {
  const ArtifactMetadata &m = *md;
  int sm = smNumber(m.cudaArch), have = major * 10 + minor;
  std::string gpu = name + " (sm_" + std::to_string(have) + ")";
  // A cubin runs on its SM's major version at the same or a later minor;
  // PTX on any device at least as new as its SM.
  if (have < sm)
    throw Error("cuda: " + m.metadataPath + ": the kernels are compiled for " +
                m.cudaArch + "; " + gpu +
                " is older (compile for it: --target cuda:sm_" +
                std::to_string(have) + ")");
  bool cubin =
      m.libraryPath.size() > 6 &&
      m.libraryPath.compare(m.libraryPath.size() - 6, 6, ".cubin") == 0 &&
      have / 10 == sm / 10;
  char log[8192] = {0};
  auto load = [&](const std::string &path) -> cu::Result {
    std::string image = readFile(path);
    image.push_back('\0'); // PTX is a C string
    int options[] = {cu::JIT_ERROR_LOG_BUFFER,
                     cu::JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(sizeof(log) - 1)};
    return cu.ModuleLoadDataEx(&module, image.data(), 2, options, values);
  };
  cu::Result r = cubin ? load(m.libraryPath) : cu::ERROR_NO_BINARY_FOR_GPU;
  if (r == cu::ERROR_NO_BINARY_FOR_GPU || r == cu::ERROR_INVALID_IMAGE) {
    log[0] = '\0';
    r = load(m.ptxPath);
    if (r != cu::SUCCESS)
      throw Error(
          "cuda: " + m.ptxPath + ": " + gpu + "'s driver cannot " +
          "load the kernels' PTX: " + cu.describe(r, "cuModuleLoadDataEx") +
          (log[0] ? std::string(": ") + log : std::string()));
  } else if (r != cu::SUCCESS) {
    throw Error("cuda: " + m.libraryPath + ": " +
                cu.describe(r, "cuModuleLoadDataEx") +
                (log[0] ? std::string(": ") + log : std::string()));
  }
  for (const ArtifactMetadata::DeviceKernel &k : m.deviceKernels) {
    cu::Function f = nullptr;
    cu::Result fr = cu.ModuleGetFunction(&f, module, k.name.c_str());
    if (fr != cu::SUCCESS)
      throw Error("cuda: " + m.libraryPath + " has no kernel " + k.name +
                  " (named by " + m.metadataPath +
                  "): " + cu.describe(fr, "cuModuleGetFunction"));
    // Registers may hold a kernel below the device's threads per block.
    int most = 0;
    int64_t threads = k.workgroup[0] * k.workgroup[1] * k.workgroup[2];
    if (cu.FuncGetAttribute(&most, cu::FUNC_ATTR_MAX_THREADS_PER_BLOCK, f) ==
            cu::SUCCESS &&
        threads > most)
      throw Error("cuda: kernel " + k.name + " runs workgroups of " +
                  std::to_string(threads) + " threads; compiled for " + gpu +
                  ", it can run at most " + std::to_string(most) +
                  " (its registers)");
    functions.push_back(f);
  }
  checkedParams.assign(functions.size(), false);
}

Buffer CudaDevice::Impl::alloc(int64_t bytes, const char *what) {
  Buffer b;
  b.bytes = std::max<int64_t>(bytes, 256);
  cu::Result r = cu.MemAlloc(&b.ptr, static_cast<size_t>(b.bytes));
  if (r != cu::SUCCESS)
    throw Error("cuda: " + name + ": cannot allocate " +
                std::to_string(b.bytes) + " bytes for the " + what + ": " +
                cu.describe(r, "cuMemAlloc"));
  return b;
}

void CudaDevice::Impl::release(Buffer &b) {
  if (b.ptr)
    cu.MemFree(b.ptr);
  b = Buffer();
}

void CudaDevice::Impl::ensure(Buffer &b, int64_t bytes, const char *what) {
  if (b.ptr && b.bytes >= bytes)
    return;
  // The graphs' nodes hold the old address; their parameters follow the new
  // one at the next call (every call compares them).
  cu.check(cu.StreamSynchronize(stream), "cuStreamSynchronize");
  release(b);
  b = alloc(bytes, what);
}

const Buffer &CudaDevice::Impl::root(const std::string &n) const {
  if (n == "weights")
    return weights;
  if (n == "kv")
    return kv;
  if (n == "arena")
    return arena;
  if (n == "tokens")
    return tokens;
  return logits;
}

void CudaDevice::Impl::checkParams(size_t kernel,
                                   const std::vector<size_t> &sizes) {
  if (checkedParams[kernel] || !cu.FuncGetParamInfo)
    return;
  const std::string &kname = md->deviceKernels[kernel].name;
  for (size_t i = 0; i <= sizes.size(); ++i) {
    size_t offset = 0, size = 0;
    cu::Result r = cu.FuncGetParamInfo(functions[kernel], i, &offset, &size);
    // A driver that cannot tell (anything but an answer or "no such
    // parameter" at the first): nothing to check against.
    if (i == 0 && r != cu::SUCCESS && r != cu::ERROR_INVALID_VALUE)
      break;
    if (i == sizes.size()) {
      if (r == cu::SUCCESS)
        throw Error("cuda: kernel " + kname + " takes more than the " +
                    std::to_string(sizes.size()) +
                    " parameters its launches pass (the artifact's program "
                    "and its kernels disagree)");
      break;
    }
    if (r != cu::SUCCESS || size != sizes[i])
      throw Error("cuda: kernel " + kname + "'s parameter " +
                  std::to_string(i) + " is " +
                  (r == cu::SUCCESS ? std::to_string(size) + " bytes"
                                    : std::string("missing")) +
                  "; its launches pass " + std::to_string(sizes[i]) +
                  " (the artifact's program and its kernels disagree)");
  }
  checkedParams[kernel] = true;
}

void CudaDevice::Impl::destroy(PhaseGraph &g) {
  if (g.exec)
    cu.GraphExecDestroy(g.exec);
  if (g.graph)
    cu.GraphDestroy(g.graph);
  g = PhaseGraph();
}

cu::KernelNodeParams
CudaDevice::Impl::kernelParams(const Step &s,
                               std::vector<void *> &pointers) const {
  const ArtifactMetadata::DeviceKernel &k = md->deviceKernels[s.kernel];
  cu::KernelNodeParams p;
  p.func = functions[s.kernel];
  p.gridDimX = s.grid[0];
  p.gridDimY = s.grid[1];
  p.gridDimZ = s.grid[2];
  p.blockDimX = static_cast<unsigned>(k.workgroup[0]);
  p.blockDimY = static_cast<unsigned>(k.workgroup[1]);
  p.blockDimZ = static_cast<unsigned>(k.workgroup[2]);
  // The driver copies the values at the call; `pointers` outlives it.
  pointers.clear();
  for (const uint64_t &v : s.values)
    pointers.push_back(const_cast<uint64_t *>(&v));
  p.kernelParams = pointers.data();
  return p;
}

cu::Memcpy3D CudaDevice::Impl::copyParams(const Step &s) const {
  cu::Memcpy3D c;
  c.srcMemoryType = cu::MEMORYTYPE_DEVICE;
  c.srcDevice = s.src;
  c.dstMemoryType = cu::MEMORYTYPE_DEVICE;
  c.dstDevice = s.dst;
  c.WidthInBytes = static_cast<size_t>(s.bytes);
  c.Height = 1;
  c.Depth = 1;
  // One row: pitch and height as a captured 1-D copy has them.
  c.srcPitch = c.dstPitch = c.WidthInBytes;
  c.srcHeight = c.dstHeight = 1;
  return c;
}

void CudaDevice::Impl::openBlas() {
  blas.load();
  blas.check(blas.Create(&blasHandle), "cublasCreate");
  blasWorkspace = alloc(kBlasWorkspaceBytes, "cuBLAS workspace");
  blasOn(stream);
  cu.check(cu.StreamCreate(&captureStream, 0), "cuStreamCreate");
}

void CudaDevice::Impl::blasOn(cu::Stream s) {
  blas.check(blas.SetStream(blasHandle, s), "cublasSetStream");
  blas.check(blas.SetWorkspace(blasHandle,
                               reinterpret_cast<void *>(blasWorkspace.ptr),
                               static_cast<size_t>(blasWorkspace.bytes)),
             "cublasSetWorkspace");
}

void CudaDevice::Impl::gemm(const GemmCall &c) {
  // Row-major out[m][n] = a[m][k] . b[n][k]^T is, column-major, out^T (n x
  // m) = b^T . a: b transposed (its rows the columns), a as it is.
  blas.check(blas.GemmEx(blasHandle, cu::BLAS_OP_T, cu::BLAS_OP_N, c.n, c.m,
                         c.k, &c.alpha, reinterpret_cast<const void *>(c.b),
                         cu::DATA_R_16F, c.ldb,
                         reinterpret_cast<const void *>(c.a), cu::DATA_R_16F,
                         c.lda, &c.beta, reinterpret_cast<void *>(c.out),
                         cu::DATA_R_32F, c.ldc, cu::BLAS_COMPUTE_32F,
                         cu::BLAS_GEMM_DEFAULT),
             "cublasGemmEx");
}

cu::Graph CudaDevice::Impl::captureGemm(const GemmCall &c) {
  // However it ends, the capture is closed and the handle back on the
  // stream of direct calls.
  bool capturing = false;
  cu::Graph g = nullptr;
  auto restore = [&] {
    if (capturing) {
      cu::Graph partial = nullptr;
      cu.StreamEndCapture(captureStream, &partial);
      if (partial)
        cu.GraphDestroy(partial);
    }
    blas.SetStream(blasHandle, stream);
    blas.SetWorkspace(blasHandle, reinterpret_cast<void *>(blasWorkspace.ptr),
                      static_cast<size_t>(blasWorkspace.bytes));
  };
  try {
    blasOn(captureStream);
    cu.check(
        cu.StreamBeginCapture(captureStream, cu::STREAM_CAPTURE_MODE_RELAXED),
        "cuStreamBeginCapture");
    capturing = true;
    gemm(c);
    capturing = false;
    cu.check(cu.StreamEndCapture(captureStream, &g), "cuStreamEndCapture");
  } catch (...) {
    restore();
    throw;
  }
  blasOn(stream);
  return g;
}

CudaDevice::CudaDevice(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
CudaDevice::~CudaDevice() = default;

std::unique_ptr<CudaDevice> CudaDevice::open(const ArtifactMetadata &md,
                                             const void *weightData,
                                             int64_t weightBytes) {
  auto d = std::make_unique<Impl>();
  d->md = &md;
  d->cu.load();
  d->openDevice(deviceIndex());
  d->loadModule();
  if (const char *g = std::getenv("LLMC_CUDA_GRAPHS"))
    d->useGraphs = std::strcmp(g, "0") != 0;
  // cuBLAS only where the program calls it (a CUDA install without it runs
  // every other artifact).
  for (const auto *phase : {&md.prefill, &md.decode})
    if (!d->blasHandle &&
        std::any_of(phase->begin(), phase->end(),
                    [](const ArtifactMetadata::Launch &l) { return l.gemm; }))
      d->openBlas();
  d->weights = d->alloc(weightBytes, "weights");
  d->cu.check(d->cu.MemcpyHtoD(d->weights.ptr, weightData,
                               static_cast<size_t>(weightBytes)),
              "cuMemcpyHtoD (the weights)");
  int64_t kvBytes = md.kvCacheElementBytes;
  for (int64_t e : md.kvCacheShape)
    kvBytes *= e;
  d->kv = d->alloc(kvBytes, "KV cache");
  d->cu.check(d->cu.MemsetD8(d->kv.ptr, 0, static_cast<size_t>(d->kv.bytes)),
              "cuMemsetD8 (the KV cache)");
  d->tokens = d->alloc(md.maxSeqLen * 4, "tokens");
  return std::unique_ptr<CudaDevice>(new CudaDevice(std::move(d)));
}

void CudaDevice::Impl::runGraph(PhaseGraph &g, std::vector<Step> &steps) {
  std::vector<size_t> entries;
  for (const Step &s : steps)
    entries.push_back(s.entry);
  std::vector<void *> pointers;
  // A product of cuBLAS that changed (a prompt of another length) is a
  // graph captured anew: the whole graph is rebuilt.
  bool rebuild = !g.exec || entries != g.entries;
  for (size_t i = 0; !rebuild && i < steps.size(); ++i)
    rebuild = steps[i].gemm && !(steps[i].call == g.steps[i].call);
  if (rebuild) {
    // The launches that run at this size changed: a graph of them, each
    // after the one before (the program's order).
    destroy(g);
    cu.check(cu.GraphCreate(&g.graph, 0), "cuGraphCreate");
    // Kernels that wait for the grid before them (the artifact's
    // device.pdl) follow a kernel through a programmatic edge where the
    // driver has them: each starts while the one before ends.
    bool programmatic =
        md->cudaDependentLaunch && cu.GraphAddDependencies && programmaticEdges;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step &s = steps[i];
      cu::GraphNode node = nullptr;
      const cu::GraphNode *dep = g.nodes.empty() ? nullptr : &g.nodes.back();
      size_t deps = g.nodes.empty() ? 0 : 1;
      bool edge = programmatic && i > 0 && !s.copy && !s.gemm &&
                  !steps[i - 1].copy && !steps[i - 1].gemm;
      if (s.gemm) {
        cu::Graph child = captureGemm(s.call);
        cu::Result r =
            cu.GraphAddChildGraphNode(&node, g.graph, dep, deps, child);
        cu.GraphDestroy(child); // the node holds a copy
        cu.check(r, "cuGraphAddChildGraphNode");
      } else if (s.copy) {
        cu::Memcpy3D c = copyParams(s);
        cu.check(cu.GraphAddMemcpyNode(&node, g.graph, dep, deps, &c, ctx),
                 "cuGraphAddMemcpyNode");
      } else {
        cu::KernelNodeParams p = kernelParams(s, pointers);
        cu.check(cu.GraphAddKernelNode(&node, g.graph, edge ? nullptr : dep,
                                       edge ? 0 : deps, &p),
                 "cuGraphAddKernelNode");
      }
      if (edge) {
        cu::GraphEdgeData e;
        e.fromPort = cu::GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
        e.type = cu::GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
        if (cu.GraphAddDependencies(g.graph, dep, &node, &e, 1) !=
            cu::SUCCESS) {
          // A driver that refuses the programmatic edge: the default one
          // (full completion), here and from now on.
          programmatic = programmaticEdges = false;
          cu::GraphEdgeData plain;
          cu.check(cu.GraphAddDependencies(g.graph, dep, &node, &plain, 1),
                   "cuGraphAddDependencies_v2");
        }
      }
      g.nodes.push_back(node);
    }
    cu.check(cu.GraphInstantiateWithFlags(&g.exec, g.graph, 0),
             "cuGraphInstantiateWithFlags");
    g.entries = std::move(entries);
    g.steps = steps;
  } else {
    // The same launches: update the nodes whose grid or arguments moved
    // (the products of cuBLAS are the same).
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i] == g.steps[i])
        continue;
      if (steps[i].copy) {
        cu::Memcpy3D c = copyParams(steps[i]);
        cu.check(cu.GraphExecMemcpyNodeSetParams(g.exec, g.nodes[i], &c, ctx),
                 "cuGraphExecMemcpyNodeSetParams");
      } else {
        cu::KernelNodeParams p = kernelParams(steps[i], pointers);
        cu.check(cu.GraphExecKernelNodeSetParams(g.exec, g.nodes[i], &p),
                 "cuGraphExecKernelNodeSetParams");
      }
      g.steps[i] = steps[i];
    }
  }
  cu.check(cu.GraphLaunch(g.exec, stream), "cuGraphLaunch");
}

void CudaDevice::Impl::runDirect(
    std::vector<Step> &steps,
    const std::vector<ArtifactMetadata::Launch> &launches) {
  std::vector<void *> pointers;
  if (profiling && events.size() < steps.size() + 1) {
    while (events.size() < steps.size() + 1) {
      cu::Event e = nullptr;
      cu.check(cu.EventCreate(&e, 0), "cuEventCreate");
      events.push_back(e);
    }
  }
  if (profiling)
    cu.check(cu.EventRecord(events[0], stream), "cuEventRecord");
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &s = steps[i];
    if (s.gemm) {
      gemm(s.call);
    } else if (s.copy) {
      cu.check(cu.MemcpyDtoDAsync(s.dst, s.src, static_cast<size_t>(s.bytes),
                                  stream),
               "cuMemcpyDtoDAsync");
    } else {
      cu::KernelNodeParams p = kernelParams(s, pointers);
      cu.check(cu.LaunchKernel(p.func, p.gridDimX, p.gridDimY, p.gridDimZ,
                               p.blockDimX, p.blockDimY, p.blockDimZ, 0, stream,
                               p.kernelParams, nullptr),
               "cuLaunchKernel");
    }
    if (profiling)
      cu.check(cu.EventRecord(events[i + 1], stream), "cuEventRecord");
  }
  if (!profiling)
    return;
  cu.check(cu.EventSynchronize(events[steps.size()]), "cuEventSynchronize");
  for (size_t i = 0; i < steps.size(); ++i) {
    float ms = 0;
    cu.check(cu.EventElapsedTime(&ms, events[i], events[i + 1]),
             "cuEventElapsedTime");
    const ArtifactMetadata::Launch &l = launches[steps[i].entry];
    size_t kernels = md->deviceKernels.size();
    StepTime &t = times[l.copy ? kernels : l.gemm ? kernels + 1 : l.kernel];
    t.calls += 1;
    t.nanoseconds += static_cast<int64_t>(double(ms) * 1e6);
  }
}

void CudaDevice::forward(const int32_t *tokenIds, int64_t n, int64_t pos0,
                         float *out, int64_t rows) {
  Impl &d = *impl;
  const ArtifactMetadata &md = *d.md;
  d.cu.check(d.cu.CtxSetCurrent(d.ctx), "cuCtxSetCurrent");
  bool decode = n == 1 && !md.decode.empty();
  const std::vector<ArtifactMetadata::Launch> &launches =
      decode ? md.decode : md.prefill;
  d.ensure(d.arena, std::max<int64_t>(md.arenaBytes(n, pos0, rows), 256),
           "arena");
  d.ensure(d.logits, rows * md.vocabSize * 4, "logits");
  d.ensure(d.tokens, n * 4, "tokens");
  ArtifactMetadata::CallSizes sizes;
  sizes.tokens = n;
  sizes.pos0 = pos0;
  sizes.nOut = rows;
  sizes.weightsBytes = md.weightsBytes;
  sizes.arenaBytes = d.arena.bytes;
  sizes.tokenIds = tokenIds;

  // Every step's grid, bindings and scalars at this call; each checked
  // before anything runs, so that an error launches nothing (the scratch
  // buffers may have grown).
  std::vector<Step> steps;
  std::vector<uint64_t> addresses;
  std::vector<int64_t> bindingBytes, scalars;
  std::vector<size_t> paramSizes;
  auto binding = [&](const ArtifactMetadata::DeviceArg &a, int64_t offset,
                     int64_t bytes, const std::string &who) {
    const Buffer &r = d.root(a.buffer);
    if (offset < 0 || bytes < 0 || offset + bytes > r.bytes)
      throw Error("cuda: " + who + " binds bytes [" + std::to_string(offset) +
                  ", " + std::to_string(offset + bytes) + ") of the " +
                  a.buffer + " buffer of " + std::to_string(r.bytes));
    return r.ptr + static_cast<uint64_t>(offset);
  };
  for (size_t i = 0; i < launches.size(); ++i) {
    const ArtifactMetadata::Launch &l = launches[i];
    Step s;
    s.entry = i;
    s.kernel = l.copy || l.gemm ? 0 : static_cast<size_t>(l.kernel);
    s.copy = l.copy;
    s.gemm = l.gemm;
    if (l.gemm) {
      const ArtifactMetadata::Gemm &g = l.product;
      int64_t gm = ArtifactMetadata::evaluate(g.m, sizes);
      if (gm == 0)
        continue; // no rows at this size
      int64_t gn = ArtifactMetadata::evaluate(g.n, sizes),
              k = ArtifactMetadata::evaluate(g.k, sizes),
              lda = ArtifactMetadata::evaluate(g.lda, sizes),
              ldb = ArtifactMetadata::evaluate(g.ldb, sizes),
              ldc = ArtifactMetadata::evaluate(g.ldc, sizes);
      auto bad = [&](const std::string &what) {
        return Error("cuda: a cuBLAS product of the " +
                     std::string(decode ? "decode" : "prefill") +
                     " program (entry " + std::to_string(i) + ") " + what +
                     " (the artifact's program is inconsistent)");
      };
      for (int64_t v : {gm, gn, k, lda, ldb, ldc})
        if (v <= 0 || v > std::numeric_limits<int32_t>::max())
          throw bad("has a size or leading dimension of " + std::to_string(v));
      if (lda < k || ldb < k || ldc < gn)
        throw bad("has rows longer than their leading dimension");
      // Each matrix inside its binding, its binding inside its buffer.
      auto matrix = [&](const ArtifactMetadata::DeviceArg &a, int64_t h,
                        int64_t w, int64_t ld, int64_t elemBytes,
                        const char *which) {
        int64_t offset = ArtifactMetadata::evaluate(a.offset, sizes);
        int64_t bytes = ArtifactMetadata::evaluate(a.bytes, sizes);
        if (((h - 1) * ld + w) * elemBytes > bytes)
          throw bad(std::string("reads past its binding of ") + which);
        return binding(a, offset, bytes, std::string("cuBLAS's ") + which);
      };
      s.call.a = matrix(g.a, gm, k, lda, 2, "a");
      s.call.b = matrix(g.b, gn, k, ldb, 2, "b");
      s.call.out = matrix(g.out, gm, gn, ldc, 4, "out");
      s.call.m = static_cast<int>(gm);
      s.call.n = static_cast<int>(gn);
      s.call.k = static_cast<int>(k);
      s.call.lda = static_cast<int>(lda);
      s.call.ldb = static_cast<int>(ldb);
      s.call.ldc = static_cast<int>(ldc);
      s.call.alpha = static_cast<float>(g.alpha);
      s.call.beta = static_cast<float>(g.beta);
      steps.push_back(std::move(s));
      continue;
    }
    if (l.copy) {
      int64_t from = ArtifactMetadata::evaluate(l.src.offset, sizes);
      int64_t to = ArtifactMetadata::evaluate(l.dst.offset, sizes);
      s.bytes = ArtifactMetadata::evaluate(l.bytes, sizes);
      if (s.bytes == 0)
        continue;
      s.src = binding(l.src, from, s.bytes, "a copy");
      s.dst = binding(l.dst, to, s.bytes, "a copy");
      steps.push_back(std::move(s));
      continue;
    }
    const std::string &kname = md.deviceKernels[l.kernel].name;
    bool empty = false;
    for (int g = 0; g < 3; ++g) {
      int64_t v = ArtifactMetadata::evaluate(l.grid[g], sizes);
      if (v <= 0) {
        empty = true;
        break;
      }
      if (v > d.maxGrid[g])
        throw Error("cuda: kernel " + kname + " needs " + std::to_string(v) +
                    " workgroups on axis " + "xyz"[g] + "; " + d.name +
                    " runs at most " + std::to_string(d.maxGrid[g]));
      s.grid[g] = static_cast<unsigned>(v);
    }
    if (empty)
      continue; // nothing to run at this size
    addresses.clear();
    bindingBytes.clear();
    scalars.clear();
    for (const ArtifactMetadata::DeviceArg &a : l.args) {
      if (a.scalar) {
        int64_t v = ArtifactMetadata::evaluate(a.value, sizes);
        if (v < std::numeric_limits<int32_t>::min() ||
            v > std::numeric_limits<int32_t>::max())
          throw Error("cuda: kernel " + kname + "'s scalar argument is " +
                      std::to_string(v) +
                      ", past the 32-bit integers the kernels index with");
        scalars.push_back(v);
        continue;
      }
      int64_t offset = ArtifactMetadata::evaluate(a.offset, sizes);
      int64_t bytes = ArtifactMetadata::evaluate(a.bytes, sizes);
      addresses.push_back(binding(a, offset, bytes, "kernel " + kname));
      bindingBytes.push_back(bytes);
    }
    paramSizes.clear();
    cudaLaunchParams(l, addresses, bindingBytes, scalars, paramSizes, s.values);
    d.checkParams(l.kernel, paramSizes);
    steps.push_back(std::move(s));
  }

  d.cu.check(d.cu.MemcpyHtoDAsync(d.tokens.ptr, tokenIds,
                                  static_cast<size_t>(n) * 4, d.stream),
             "cuMemcpyHtoDAsync (the tokens)");
  if (d.profiling || !d.useGraphs)
    d.runDirect(steps, launches);
  else
    d.runGraph(d.graphs[decode ? 1 : 0], steps);
  d.cu.check(d.cu.StreamSynchronize(d.stream), "cuStreamSynchronize");
  d.cu.check(d.cu.MemcpyDtoH(out, d.logits.ptr,
                             static_cast<size_t>(rows * md.vocabSize) * 4),
             "cuMemcpyDtoH (the logits)");
}

void CudaDevice::enableProfile() {
  impl->profiling = true;
  resetProfile();
}

const std::vector<Device::StepTime> &CudaDevice::profile() const {
  return impl->times;
}

void CudaDevice::resetProfile() {
  if (impl->profiling)
    // The kernels, the copies, the products of cuBLAS.
    impl->times.assign(impl->md->deviceKernels.size() + 2, StepTime());
}

double CudaDevice::readBandwidth(int64_t bytes, int passes) {
  Impl &d = *impl;
  d.cu.check(d.cu.CtxSetCurrent(d.ctx), "cuCtxSetCurrent");
  bytes = std::max<int64_t>(bytes / 256 * 256, 256);
  Buffer src = d.alloc(bytes, "bandwidth probe"), dst;
  cu::Event a = nullptr, b = nullptr;
  double best = 0;
  try {
    dst = d.alloc(bytes, "bandwidth probe");
    d.cu.check(d.cu.MemsetD8(src.ptr, 1, static_cast<size_t>(bytes)),
               "cuMemsetD8");
    d.cu.check(d.cu.EventCreate(&a, 0), "cuEventCreate");
    d.cu.check(d.cu.EventCreate(&b, 0), "cuEventCreate");
    for (int p = 0; p < std::max(passes, 1) + 1; ++p) {
      d.cu.check(d.cu.EventRecord(a, d.stream), "cuEventRecord");
      d.cu.check(d.cu.MemcpyDtoDAsync(dst.ptr, src.ptr,
                                      static_cast<size_t>(bytes), d.stream),
                 "cuMemcpyDtoDAsync");
      d.cu.check(d.cu.EventRecord(b, d.stream), "cuEventRecord");
      d.cu.check(d.cu.EventSynchronize(b), "cuEventSynchronize");
      float ms = 0;
      d.cu.check(d.cu.EventElapsedTime(&ms, a, b), "cuEventElapsedTime");
      // The first pass warms up; a copy reads and writes `bytes`.
      if (p > 0 && ms > 0)
        best = std::max(best, 2.0 * double(bytes) / (double(ms) * 1e-3));
    }
  } catch (...) {
    if (a)
      d.cu.EventDestroy(a);
    if (b)
      d.cu.EventDestroy(b);
    d.release(src);
    d.release(dst);
    throw;
  }
  d.cu.EventDestroy(a);
  d.cu.EventDestroy(b);
  d.release(src);
  d.release(dst);
  return best;
}

std::vector<std::string> CudaDevice::list() {
  cu::Driver cu;
  try {
    cu.load();
  } catch (const Error &) {
    return {};
  }
  std::vector<std::string> out;
  int count = 0;
  if (cu.DeviceGetCount(&count) != cu::SUCCESS)
    return out;
  for (int i = 0; i < count; ++i) {
    cu::Device dev = 0;
    char name[256] = {0};
    int major = 0, minor = 0, sms = 0;
    size_t mem = 0;
    if (cu.DeviceGet(&dev, i) != cu::SUCCESS ||
        cu.DeviceGetName(name, sizeof(name) - 1, dev) != cu::SUCCESS ||
        cu.DeviceGetAttribute(&major, cu::ATTR_COMPUTE_CAPABILITY_MAJOR, dev) !=
            cu::SUCCESS ||
        cu.DeviceGetAttribute(&minor, cu::ATTR_COMPUTE_CAPABILITY_MINOR, dev) !=
            cu::SUCCESS)
      continue;
    cu.DeviceGetAttribute(&sms, cu::ATTR_MULTIPROCESSOR_COUNT, dev);
    cu.DeviceTotalMem(&mem, dev);
    char line[512];
    std::snprintf(line, sizeof(line), "cuda %d: %s (sm_%d%d, %.1f GiB, %d SMs)",
                  i, name, major, minor, double(mem) / (1u << 30), sms);
    out.push_back(line);
  }
  return out;
}

std::string CudaDevice::describe(int index) {
  cu::Driver cu;
  cu.load();
  int count = 0;
  cu.check(cu.DeviceGetCount(&count), "cuDeviceGetCount");
  if (index < 0 || index >= count)
    throw Error("cuda: no device " + std::to_string(index) + " (the driver " +
                "lists " + std::to_string(count) + ")");
  cu::Device dev = 0;
  int major = 0, minor = 0, sms = 0;
  cu.check(cu.DeviceGet(&dev, index), "cuDeviceGet");
  cu.check(
      cu.DeviceGetAttribute(&major, cu::ATTR_COMPUTE_CAPABILITY_MAJOR, dev),
      "cuDeviceGetAttribute");
  cu.check(
      cu.DeviceGetAttribute(&minor, cu::ATTR_COMPUTE_CAPABILITY_MINOR, dev),
      "cuDeviceGetAttribute");
  cu.check(cu.DeviceGetAttribute(&sms, cu::ATTR_MULTIPROCESSOR_COUNT, dev),
           "cuDeviceGetAttribute");
  // Its SM and its own count of SMs (the compute units a schedule fills).
  std::string desc = "cuda:sm_" + std::to_string(major * 10 + minor);
  if (sms > 0)
    desc += ",cores=" + std::to_string(sms);
  return desc;
}

} // namespace llmc::rt
