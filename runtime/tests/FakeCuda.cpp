//===- FakeCuda.cpp - a CUDA driver for testing the runtime without a GPU -===//
//
// libllmc_fake_cuda.so answers the driver API entry points the runtime calls
// (CudaDriver.h), for the e2e tests of `runtime/src/CudaDevice.cpp` on
// machines without a GPU (LLMC_CUDA_DRIVER names it). It runs no kernel.
// What it does check is everything around the kernels:
// - device memory is host memory it allocates, so copies really copy and
//   every address the runtime passes (a kernel's buffer parameters, a copy's
//   ends) must lie inside an allocation, with the bytes the launch says it
//   binds;
// - modules: a PTX image is parsed for its entry points and their parameter
//   sizes (which cuFuncGetParamInfo reports, so that the runtime's check of
//   its launches against the kernels runs against the compiler's PTX); any
//   other image (a cubin) is refused with CUDA_ERROR_NO_BINARY_FOR_GPU, the
//   answer of a GPU of another architecture;
// - graphs: nodes, instantiations, launches and in-place updates are
//   counted.
// Every call that matters is appended to the file LLMC_FAKE_CUDA_LOG, one
// line each ("launch NAME gx gy gz", "graph_instantiate NODES",
// "graph_update NODE", "htod BYTES", ...), which the tests read; a misuse is
// a line "error: ..." and an error code.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using Result = int;
constexpr Result OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2,
                 NO_BINARY_FOR_GPU = 209, INVALID_PTX = 218, NOT_FOUND = 500;

struct Kernel {
  std::string name;
  std::vector<size_t> params; ///< bytes of each parameter
};

struct Module {
  std::vector<std::unique_ptr<Kernel>> kernels;
};

struct Node {
  bool copy = false;
  Kernel *kernel = nullptr;
  /// A child graph (a captured cuBLAS product).
  bool child = false;
};

struct Graph {
  std::vector<Node> nodes;
  /// The last node was added without its edge from the one before, which a
  /// cuGraphAddDependencies_v2 must add next.
  bool pending = false;
};

std::mutex mu;
std::map<uintptr_t, size_t> allocations; // start -> bytes

void log(const std::string &line) {
  const char *path = std::getenv("LLMC_FAKE_CUDA_LOG");
  if (!path || !*path)
    return;
  if (FILE *f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

Result fail(const std::string &why, Result r = INVALID_VALUE) {
  log("error: " + why);
  return r;
}

/// Whether [p, p + bytes) lies inside one allocation.
bool inside(uint64_t p, uint64_t bytes) {
  auto it = allocations.upper_bound(static_cast<uintptr_t>(p));
  if (it == allocations.begin())
    return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

/// The entry points of a PTX module and their parameters' sizes.
bool parsePTX(const char *text, Module &m) {
  std::string s(text);
  if (s.find(".version") == std::string::npos)
    return false;
  size_t at = 0;
  while ((at = s.find(".entry ", at)) != std::string::npos) {
    at += 7;
    size_t open = s.find('(', at);
    size_t close = s.find(')', open);
    if (open == std::string::npos || close == std::string::npos)
      return false;
    auto k = std::make_unique<Kernel>();
    k->name = s.substr(at, open - at);
    while (!k->name.empty() && k->name.back() == ' ')
      k->name.pop_back();
    std::string params = s.substr(open, close - open);
    size_t p = 0;
    while ((p = params.find(".param ", p)) != std::string::npos) {
      size_t end = params.find_first_of(",)", p);
      std::string decl = params.substr(p, end - p);
      if (decl.find(".u64") != std::string::npos ||
          decl.find(".b64") != std::string::npos ||
          decl.find(".s64") != std::string::npos ||
          decl.find(".f64") != std::string::npos)
        k->params.push_back(8);
      else if (decl.find(".u32") != std::string::npos ||
               decl.find(".b32") != std::string::npos ||
               decl.find(".s32") != std::string::npos ||
               decl.find(".f32") != std::string::npos)
        k->params.push_back(4);
      else
        return false; // a parameter of a kind llmc's kernels do not take
      p += 7;
    }
    m.kernels.push_back(std::move(k));
    at = close;
  }
  return !m.kernels.empty();
}

/// The driver's view of a kernel launch: its buffer parameters (the
/// memref descriptors: address, address, offset, size = the binding's
/// bytes, stride) must lie in device memory.
Result checkLaunch(Kernel *k, void **params, const char *what) {
  if (!k)
    return fail(std::string(what) + ": no kernel");
  if (!params)
    return fail(std::string(what) + ": no parameters for " + k->name);
  const std::vector<size_t> &sizes = k->params;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!params[i])
      return fail(std::string(what) + ": parameter " + std::to_string(i) +
                  " of " + k->name + " is null");
    if (sizes[i] == 8 && i + 4 < sizes.size() && sizes[i + 1] == 8) {
      uint64_t a, b;
      uint32_t offset, bytes, stride;
      std::memcpy(&a, params[i], 8);
      std::memcpy(&b, params[i + 1], 8);
      std::memcpy(&offset, params[i + 2], 4);
      std::memcpy(&bytes, params[i + 3], 4);
      std::memcpy(&stride, params[i + 4], 4);
      if (a != b || offset != 0 || stride != 1)
        return fail(std::string(what) + ": " + k->name + "'s parameter " +
                    std::to_string(i) + " is not a descriptor (" +
                    std::to_string(offset) + ", " + std::to_string(stride) +
                    ")");
      if (!inside(a, bytes))
        return fail(std::string(what) + ": " + k->name + " binds " +
                    std::to_string(bytes) + " bytes at " + std::to_string(a) +
                    " outside device memory");
      i += 4;
    }
  }
  return OK;
}

struct KernelNodeParams {
  Kernel *func;
  unsigned gx, gy, gz, bx, by, bz, smem;
  void **kernelParams;
  void **extra;
  void *kern;
  void *ctx;
};

struct Memcpy3D {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  int srcMemoryType;
  const void *srcHost;
  uint64_t srcDevice;
  void *srcArray, *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  int dstMemoryType;
  void *dstHost;
  uint64_t dstDevice;
  void *dstArray, *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
};

Result doCopy(const Memcpy3D *c, const char *what) {
  if (c->srcMemoryType != 2 || c->dstMemoryType != 2 || c->Height != 1 ||
      c->Depth != 1)
    return fail(std::string(what) + ": not a device-to-device copy");
  if (!inside(c->srcDevice, c->WidthInBytes) ||
      !inside(c->dstDevice, c->WidthInBytes))
    return fail(std::string(what) + ": a copy outside device memory");
  return OK;
}

int contextTag, eventTag;

/// The stream being captured and what it captured (cuBLAS's products).
void *capturing = nullptr;
Graph *captured = nullptr;

/// A cuBLAS handle: its stream and workspace.
struct BlasHandle {
  void *stream = nullptr;
  uint64_t workspace = 0;
  size_t workspaceBytes = 0;
};

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31,
           mant = h & 1023, bits;
  if (exp == 0 && mant == 0) {
    bits = sign;
  } else if (exp == 0) { // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while (!(mant & 1024));
    bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 1023) << 13;
  } else if (exp == 31) {
    bits = sign | 0xff << 23 | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace

extern "C" {

Result cuInit(unsigned) { return OK; }
Result cuDriverGetVersion(int *v) {
  *v = 12080;
  return OK;
}
Result cuGetErrorName(Result r, const char **s) {
  *s = r == NO_BINARY_FOR_GPU ? "CUDA_ERROR_NO_BINARY_FOR_GPU"
                              : "CUDA_ERROR_FAKE";
  return OK;
}
Result cuGetErrorString(Result, const char **s) {
  *s = "the fake driver refused the call";
  return OK;
}
Result cuDeviceGetCount(int *n) {
  *n = 1;
  return OK;
}
Result cuDeviceGet(int *d, int i) {
  if (i != 0)
    return fail("cuDeviceGet " + std::to_string(i));
  *d = 0;
  return OK;
}
Result cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, static_cast<size_t>(len), "llmc fake GPU");
  return OK;
}
Result cuDeviceGetAttribute(int *v, int attr, int) {
  switch (attr) {
  case 1: // threads per block
  case 2: // block x, y
  case 3:
    *v = 1024;
    return OK;
  case 4: // block z
    *v = 64;
    return OK;
  case 5:
    *v = 2147483647;
    return OK;
  case 6:
  case 7:
    *v = 65535;
    return OK;
  case 8:
    *v = 49152;
    return OK;
  case 10:
    *v = 32;
    return OK;
  case 16: // an H100 PCIe's SMs (not sm_90's default, 132)
    *v = 114;
    return OK;
  case 75: // compute capability 9.0
    *v = 9;
    return OK;
  case 76:
    *v = 0;
    return OK;
  }
  return fail("cuDeviceGetAttribute " + std::to_string(attr));
}
Result cuDeviceTotalMem_v2(size_t *bytes, int) {
  *bytes = size_t(80) << 30;
  return OK;
}
Result cuDevicePrimaryCtxRetain(void **ctx, int) {
  *ctx = &contextTag;
  log("context");
  return OK;
}
Result cuDevicePrimaryCtxRelease_v2(int) { return OK; }
Result cuCtxSetCurrent(void *ctx) {
  return !ctx || ctx == &contextTag ? OK
                                    : fail("cuCtxSetCurrent: not the context");
}
Result cuModuleLoadDataEx(Module **m, const void *image, unsigned, int *,
                          void **) {
  auto mod = std::make_unique<Module>();
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text,
                   "\x7f"
                   "ELF",
                   4) == 0) {
    log("module refused: not PTX");
    return NO_BINARY_FOR_GPU;
  }
  if (!parsePTX(text, *mod))
    return fail("cuModuleLoadDataEx: PTX without entry points", INVALID_PTX);
  log("module " + std::to_string(mod->kernels.size()));
  *m = mod.release();
  return OK;
}
Result cuModuleUnload(Module *m) {
  delete m;
  return OK;
}
Result cuModuleGetFunction(Kernel **f, Module *m, const char *name) {
  for (auto &k : m->kernels)
    if (k->name == name) {
      *f = k.get();
      return OK;
    }
  log(std::string("no kernel ") + name);
  return NOT_FOUND;
}
Result cuFuncGetParamInfo(Kernel *k, size_t i, size_t *offset, size_t *size) {
  if (i >= k->params.size())
    return INVALID_VALUE;
  // Each parameter at the next multiple of its size.
  size_t at = 0;
  for (size_t j = 0; j <= i; ++j) {
    size_t n = k->params[j];
    at = (at + n - 1) / n * n;
    if (j < i)
      at += n;
  }
  *offset = at;
  *size = k->params[i];
  return OK;
}
Result cuFuncGetAttribute(int *v, int attr, Kernel *) {
  if (attr != 0) // max threads per block
    return fail("cuFuncGetAttribute " + std::to_string(attr));
  *v = 1024;
  return OK;
}
Result cuMemAlloc_v2(uint64_t *p, size_t bytes) {
  std::lock_guard<std::mutex> l(mu);
  void *mem = std::calloc(1, bytes);
  if (!mem)
    return OUT_OF_MEMORY;
  allocations[reinterpret_cast<uintptr_t>(mem)] = bytes;
  *p = reinterpret_cast<uintptr_t>(mem);
  log("alloc " + std::to_string(bytes));
  return OK;
}
Result cuMemFree_v2(uint64_t p) {
  std::lock_guard<std::mutex> l(mu);
  auto it = allocations.find(static_cast<uintptr_t>(p));
  if (it == allocations.end())
    return fail("cuMemFree of memory not allocated");
  std::free(reinterpret_cast<void *>(p));
  allocations.erase(it);
  return OK;
}
Result cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t bytes) {
  if (!inside(dst, bytes))
    return fail("cuMemcpyHtoD outside device memory");
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  log("htod " + std::to_string(bytes));
  return OK;
}
Result cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t bytes,
                            void *) {
  return cuMemcpyHtoD_v2(dst, src, bytes);
}
Result cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes) {
  if (!inside(src, bytes))
    return fail("cuMemcpyDtoH outside device memory");
  std::memcpy(dst, reinterpret_cast<void *>(src), bytes);
  log("dtoh " + std::to_string(bytes));
  return OK;
}
Result cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, void *) {
  if (!inside(src, bytes) || !inside(dst, bytes))
    return fail("cuMemcpyDtoD outside device memory");
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
               bytes);
  log("dtod " + std::to_string(bytes));
  return OK;
}
Result cuMemsetD8_v2(uint64_t dst, unsigned char v, size_t bytes) {
  if (!inside(dst, bytes))
    return fail("cuMemsetD8 outside device memory");
  std::memset(reinterpret_cast<void *>(dst), v, bytes);
  return OK;
}
Result cuStreamCreate(void **s, unsigned) {
  *s = new char(0); // each stream its own
  return OK;
}
Result cuStreamDestroy_v2(void *s) {
  delete static_cast<char *>(s);
  return OK;
}
Result cuStreamBeginCapture_v2(void *s, int mode) {
  if (capturing)
    return fail("cuStreamBeginCapture: a capture is under way");
  if (mode < 0 || mode > 2)
    return fail("cuStreamBeginCapture: no such capture mode");
  capturing = s;
  captured = new Graph();
  return OK;
}
Result cuStreamEndCapture(void *s, Graph **g) {
  if (!capturing || s != capturing)
    return fail("cuStreamEndCapture: the stream is not being captured");
  *g = captured;
  capturing = nullptr;
  captured = nullptr;
  log("capture " + std::to_string((*g)->nodes.size()));
  return OK;
}
Result cuGraphAddChildGraphNode(void **node, Graph *g, void *const *deps,
                                size_t ndeps, Graph *child) {
  if (g->pending)
    return fail("cuGraphAddChildGraphNode: the node before has no edge");
  if (!child || child->nodes.empty())
    return fail("cuGraphAddChildGraphNode: an empty child graph");
  if (ndeps != (g->nodes.empty() ? 0u : 1u) || (ndeps && !deps))
    return fail("cuGraphAddChildGraphNode: a node not after the one before");
  Node n;
  n.child = true;
  g->nodes.push_back(n);
  *node = reinterpret_cast<void *>(g->nodes.size());
  log("graph_child " + std::to_string(child->nodes.size()));
  return OK;
}

// cuBLAS (LLMC_CUBLAS names this library in the tests): a handle, its
// stream and workspace, and cublasGemmEx, which checks its operands lie in
// device memory and computes the product there (f16 x f16 -> f32), so that
// a test sees what it wrote. LLMC_FAKE_CUBLAS_FAIL makes it refuse
// (CUBLAS_STATUS_NOT_SUPPORTED).
int cublasCreate_v2(BlasHandle **h) {
  *h = new BlasHandle();
  return 0;
}
int cublasDestroy_v2(BlasHandle *h) {
  delete h;
  return 0;
}
int cublasSetStream_v2(BlasHandle *h, void *s) {
  h->stream = s;
  return 0;
}
int cublasSetWorkspace_v2(BlasHandle *h, void *w, size_t bytes) {
  if (!inside(reinterpret_cast<uint64_t>(w), bytes)) {
    fail("cublasSetWorkspace: outside device memory");
    return 7; // CUBLAS_STATUS_INVALID_VALUE
  }
  h->workspace = reinterpret_cast<uint64_t>(w);
  h->workspaceBytes = bytes;
  return 0;
}
const char *cublasGetStatusName(int status) {
  return status == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED"
                      : "CUBLAS_STATUS_INVALID_VALUE";
}
int cublasGemmEx(BlasHandle *h, int transa, int transb, int m, int n, int k,
                 const void *alpha, const void *A, int atype, int lda,
                 const void *B, int btype, int ldb, const void *beta, void *C,
                 int ctype, int ldc, int compute, int algo) {
  if (std::getenv("LLMC_FAKE_CUBLAS_FAIL")) {
    log("error: cublasGemmEx refused");
    return 15;
  }
  // llmc's one form: C (m x n, f32) = A^T (A: k x m, f16) . B (k x n, f16).
  if (transa != 1 || transb != 0 || atype != 2 || btype != 2 || ctype != 0 ||
      compute != 68 || algo != -1 || m <= 0 || n <= 0 || k <= 0 || lda < k ||
      ldb < k || ldc < m) {
    fail("cublasGemmEx: not an f16 x f16 -> f32 product of A^T and B");
    return 7;
  }
  uint64_t a = reinterpret_cast<uint64_t>(A), b = reinterpret_cast<uint64_t>(B),
           c = reinterpret_cast<uint64_t>(C);
  if (!inside(a, (uint64_t(m - 1) * lda + k) * 2) ||
      !inside(b, (uint64_t(n - 1) * ldb + k) * 2) ||
      !inside(c, (uint64_t(n - 1) * ldc + m) * 4)) {
    fail("cublasGemmEx: a matrix outside device memory");
    return 7;
  }
  float al = *static_cast<const float *>(alpha),
        be = *static_cast<const float *>(beta);
  auto *pa = reinterpret_cast<const uint16_t *>(a);
  auto *pb = reinterpret_cast<const uint16_t *>(b);
  auto *pc = reinterpret_cast<float *>(c);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      float sum = 0;
      for (int p = 0; p < k; ++p)
        sum += halfToFloat(pa[size_t(i) * lda + p]) *
               halfToFloat(pb[size_t(j) * ldb + p]);
      float &out = pc[size_t(j) * ldc + i];
      out = al * sum + (be == 0 ? 0 : be * out);
    }
  bool inCapture = capturing && h->stream == capturing;
  if (inCapture)
    captured->nodes.push_back(Node());
  log(std::string(inCapture ? "gemm_captured " : "gemm ") + std::to_string(m) +
      " " + std::to_string(n) + " " + std::to_string(k) + " " +
      std::to_string(lda) + " " + std::to_string(ldb) + " " +
      std::to_string(ldc) + " " + std::to_string(al) + " " +
      std::to_string(be));
  return 0;
}
Result cuStreamSynchronize(void *) { return OK; }
Result cuLaunchKernel(Kernel *k, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned, void *,
                      void **params, void **) {
  if (Result r = checkLaunch(k, params, "cuLaunchKernel"))
    return r;
  if (!gx || !gy || !gz || !bx || !by || !bz)
    return fail("cuLaunchKernel: an empty grid or block");
  log("launch " + k->name + " " + std::to_string(gx) + " " +
      std::to_string(gy) + " " + std::to_string(gz));
  return OK;
}
Result cuEventCreate(void **e, unsigned) {
  *e = &eventTag;
  return OK;
}
Result cuEventDestroy_v2(void *) { return OK; }
Result cuEventRecord(void *, void *) { return OK; }
Result cuEventSynchronize(void *) { return OK; }
Result cuEventElapsedTime_v2(float *ms, void *, void *) {
  *ms = 0.001f;
  return OK;
}
Result cuGraphCreate(Graph **g, unsigned) {
  *g = new Graph();
  return OK;
}
Result cuGraphDestroy(Graph *g) {
  delete g;
  return OK;
}
Result cuGraphAddKernelNode_v2(void **node, Graph *g, void *const *deps,
                               size_t ndeps, const KernelNodeParams *p) {
  if (Result r = checkLaunch(p->func, p->kernelParams, "cuGraphAddKernelNode"))
    return r;
  if (g->pending)
    return fail("cuGraphAddKernelNode: the node before has no edge");
  // A kernel after a kernel may come without its edge, which
  // cuGraphAddDependencies_v2 then adds (a programmatic one).
  bool later = !g->nodes.empty() && !g->nodes.back().copy &&
               !g->nodes.back().child && ndeps == 0;
  if (!later && (ndeps != (g->nodes.empty() ? 0u : 1u) || (ndeps && !deps)))
    return fail("cuGraphAddKernelNode: a node not after the one before");
  g->nodes.push_back({false, p->func});
  g->pending = later;
  *node = reinterpret_cast<void *>(g->nodes.size());
  return OK;
}
Result cuGraphAddDependencies_v2(Graph *g, void *const *from, void *const *to,
                                 const unsigned char *edge, size_t n) {
  size_t last = g->nodes.size();
  if (!g->pending || n != 1 || !from || !to ||
      reinterpret_cast<size_t>(*from) != last - 1 ||
      reinterpret_cast<size_t>(*to) != last)
    return fail("cuGraphAddDependencies_v2: not the edge from the node "
                "before to the last one");
  // CUgraphEdgeData: from_port, to_port, type.
  bool programmatic = edge && edge[0] == 1 && edge[1] == 0 && edge[2] == 1;
  if (edge && !programmatic && (edge[0] || edge[1] || edge[2]))
    return fail("cuGraphAddDependencies_v2: an edge neither programmatic "
                "nor default");
  // A driver without programmatic edges (LLMC_FAKE_CUDA_NO_PDL):
  // CUDA_ERROR_NOT_SUPPORTED, the node still without its edge.
  if (programmatic && std::getenv("LLMC_FAKE_CUDA_NO_PDL")) {
    log("graph_edge refused");
    return Result(801);
  }
  g->pending = false;
  log(std::string("graph_edge ") + (programmatic ? "programmatic" : "default"));
  return OK;
}
Result cuGraphAddMemcpyNode(void **node, Graph *g, void *const *deps,
                            size_t ndeps, const Memcpy3D *c, void *ctx) {
  if (g->pending)
    return fail("cuGraphAddMemcpyNode: the node before has no edge");
  if (ctx != &contextTag)
    return fail("cuGraphAddMemcpyNode: not the context");
  if (Result r = doCopy(c, "cuGraphAddMemcpyNode"))
    return r;
  if (ndeps != (g->nodes.empty() ? 0u : 1u) || (ndeps && !deps))
    return fail("cuGraphAddMemcpyNode: a node not after the one before");
  g->nodes.push_back({true, nullptr});
  *node = reinterpret_cast<void *>(g->nodes.size());
  return OK;
}
Result cuGraphInstantiateWithFlags(Graph **exec, Graph *g, unsigned long long) {
  if (g->pending)
    return fail("cuGraphInstantiateWithFlags: the last node has no edge");
  *exec = new Graph(*g);
  log("graph_instantiate " + std::to_string(g->nodes.size()));
  return OK;
}
Result cuGraphExecDestroy(Graph *e) {
  delete e;
  return OK;
}
Result cuGraphLaunch(Graph *e, void *) {
  log("graph_launch " + std::to_string(e->nodes.size()));
  return OK;
}
Result cuGraphExecKernelNodeSetParams_v2(Graph *e, void *node,
                                         const KernelNodeParams *p) {
  size_t i = reinterpret_cast<uintptr_t>(node) - 1;
  if (i >= e->nodes.size() || e->nodes[i].copy || e->nodes[i].kernel != p->func)
    return fail("cuGraphExecKernelNodeSetParams: another node's kernel");
  if (Result r = checkLaunch(p->func, p->kernelParams,
                             "cuGraphExecKernelNodeSetParams"))
    return r;
  log("graph_update " + p->func->name);
  return OK;
}
Result cuGraphExecMemcpyNodeSetParams(Graph *e, void *node, const Memcpy3D *c,
                                      void *) {
  size_t i = reinterpret_cast<uintptr_t>(node) - 1;
  if (i >= e->nodes.size() || !e->nodes[i].copy)
    return fail("cuGraphExecMemcpyNodeSetParams: not a copy node");
  if (Result r = doCopy(c, "cuGraphExecMemcpyNodeSetParams"))
    return r;
  log("graph_update copy");
  return OK;
}

} // extern "C"
