//===- VulkanDevice.cpp - run a Vulkan artifact's dispatch program --------===//
#include "VulkanDevice.h"
#include "Hazards.h"
#include "SpirvReflect.h"

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>

namespace llmc::rt {

namespace {

/// The loader's entry points this runtime calls, loaded at run time.
struct VkFns {
  void *loader = nullptr;
  PFN_vkGetInstanceProcAddr getInstanceProcAddr = nullptr;
#define LLMC_VK_GLOBAL(X) X(vkCreateInstance) X(vkEnumerateInstanceVersion)
#define LLMC_VK_INSTANCE(X)                                                    \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)               \
      X(vkGetPhysicalDeviceFeatures2)                                          \
          X(vkGetPhysicalDeviceQueueFamilyProperties)                          \
              X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice)         \
                  X(vkGetDeviceProcAddr)
// clang-format off
#define LLMC_VK_DEVICE(X) \
  X(vkDestroyDevice) \
  X(vkGetDeviceQueue) \
  X(vkCreateBuffer) \
  X(vkDestroyBuffer) \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory) \
  X(vkFreeMemory) \
  X(vkBindBufferMemory) \
  X(vkMapMemory) \
  X(vkCreateShaderModule) \
  X(vkDestroyShaderModule) \
  X(vkCreateDescriptorSetLayout) \
  X(vkDestroyDescriptorSetLayout) \
  X(vkCreatePipelineLayout) \
  X(vkDestroyPipelineLayout) \
  X(vkCreateComputePipelines) \
  X(vkDestroyPipeline) \
  X(vkCreateDescriptorPool) \
  X(vkDestroyDescriptorPool) \
  X(vkAllocateDescriptorSets) \
  X(vkResetDescriptorPool) \
  X(vkUpdateDescriptorSets) \
  X(vkCreateCommandPool) \
  X(vkDestroyCommandPool) \
  X(vkAllocateCommandBuffers) \
  X(vkFreeCommandBuffers) \
  X(vkResetCommandBuffer) \
  X(vkBeginCommandBuffer) \
  X(vkEndCommandBuffer) \
  X(vkCmdBindPipeline) \
  X(vkCmdBindDescriptorSets) \
  X(vkCmdDispatch) \
  X(vkCmdPipelineBarrier) \
  X(vkCmdCopyBuffer) \
  X(vkCmdFillBuffer) \
  X(vkCreateFence) \
  X(vkDestroyFence) \
  X(vkResetFences) \
  X(vkWaitForFences) \
  X(vkQueueSubmit) \
  X(vkCreateQueryPool) \
  X(vkDestroyQueryPool) \
  X(vkCmdResetQueryPool) \
  X(vkCmdWriteTimestamp) \
  X(vkGetQueryPoolResults)
// clang-format on
#define LLMC_VK_MEMBER(name) PFN_##name name = nullptr;
  LLMC_VK_GLOBAL(LLMC_VK_MEMBER)
  LLMC_VK_INSTANCE(LLMC_VK_MEMBER)
  LLMC_VK_DEVICE(LLMC_VK_MEMBER)
#undef LLMC_VK_MEMBER

  void loadLoader() {
    // LLMC_VULKAN_LOADER names another loader library (and nothing else
    // is tried).
    const char *chosen = std::getenv("LLMC_VULKAN_LOADER");
    const char *names[] = {"libvulkan.so.1", "libvulkan.so"};
    if (chosen && *chosen)
      loader = ::dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    else
      for (const char *n : names)
        if ((loader = ::dlopen(n, RTLD_NOW | RTLD_LOCAL)))
          break;
    if (!loader) {
      const char *why = ::dlerror();
      throw Error("vulkan: cannot load the Vulkan loader (libvulkan.so.1): " +
                  std::string(why ? why : "not found") +
                  " (install libvulkan1 and a driver, e.g. "
                  "mesa-vulkan-drivers)");
    }
    getInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
        ::dlsym(loader, "vkGetInstanceProcAddr"));
    if (!getInstanceProcAddr)
      throw Error("vulkan: the loader has no vkGetInstanceProcAddr");
#define LLMC_VK_LOAD(name)                                                     \
  name = reinterpret_cast<PFN_##name>(getInstanceProcAddr(nullptr, #name));
    LLMC_VK_GLOBAL(LLMC_VK_LOAD)
#undef LLMC_VK_LOAD
    if (!vkCreateInstance)
      throw Error("vulkan: the loader has no vkCreateInstance");
  }
  void loadInstance(VkInstance instance) {
#define LLMC_VK_LOAD(name)                                                     \
  name = reinterpret_cast<PFN_##name>(getInstanceProcAddr(instance, #name));   \
  if (!name)                                                                   \
    throw Error("vulkan: the loader has no " #name);
    LLMC_VK_INSTANCE(LLMC_VK_LOAD)
#undef LLMC_VK_LOAD
  }
  void loadDevice(VkDevice device) {
#define LLMC_VK_LOAD(name)                                                     \
  name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));     \
  if (!name)                                                                   \
    throw Error("vulkan: the device has no " #name);
    LLMC_VK_DEVICE(LLMC_VK_LOAD)
#undef LLMC_VK_LOAD
  }
  ~VkFns() {
    if (loader)
      ::dlclose(loader);
  }
};

void check(VkResult r, const char *what) {
  if (r != VK_SUCCESS)
    throw Error(std::string("vulkan: ") + what + " failed (VkResult " +
                std::to_string(static_cast<int>(r)) + ")");
}

/// An instance with the fewest extras; the caller destroys it.
VkInstance createInstance(VkFns &vk, uint32_t apiVersion) {
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "llmc";
  app.apiVersion = apiVersion;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  VkResult r = vk.vkCreateInstance(&info, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error("vulkan: no driver for Vulkan " +
                std::to_string(VK_API_VERSION_MAJOR(apiVersion)) + "." +
                std::to_string(VK_API_VERSION_MINOR(apiVersion)) +
                " or later (install one, e.g. mesa-vulkan-drivers for "
                "lavapipe)");
  check(r, "vkCreateInstance");
  try {
    vk.loadInstance(instance);
  } catch (...) {
    if (vk.vkDestroyInstance)
      vk.vkDestroyInstance(instance, nullptr);
    throw;
  }
  return instance;
}

std::vector<VkPhysicalDevice> physicalDevices(VkFns &vk, VkInstance instance) {
  uint32_t count = 0;
  check(vk.vkEnumeratePhysicalDevices(instance, &count, nullptr),
        "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  if (count)
    check(vk.vkEnumeratePhysicalDevices(instance, &count, devices.data()),
          "vkEnumeratePhysicalDevices");
  return devices;
}

const char *deviceTypeName(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return "integrated GPU";
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return "discrete GPU";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return "virtual GPU";
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return "CPU";
  default:
    return "other";
  }
}

/// The device features llmc's kernels may use, as one query (or request)
/// chain: Vulkan 1.2's 8- and 16-bit storage and f16/i8 arithmetic, and the
/// core features (f64, i64, i16).
struct FeatureChain {
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{};
  VkPhysicalDevice8BitStorageFeatures s8{};
  VkPhysicalDevice16BitStorageFeatures s16{};
  VkPhysicalDeviceFeatures2 all{};
  FeatureChain() {
    f16i8.sType =
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    s8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
    s8.pNext = &f16i8;
    s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
    s16.pNext = &s8;
    all.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    all.pNext = &s16;
  }
  // The chain points into the object itself.
  FeatureChain(const FeatureChain &) = delete;
  FeatureChain &operator=(const FeatureChain &) = delete;
};

/// The device's subgroup size and whether its compute shaders have the
/// subgroup arithmetic (reductions) llmc's kernels use.
struct Subgroups {
  uint32_t size = 0;
  bool arithmetic = false;
};
Subgroups subgroupsOf(VkFns &vk, VkInstance instance, VkPhysicalDevice dev) {
  VkPhysicalDeviceSubgroupProperties sub{};
  sub.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  auto getProps2 = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(
      vk.getInstanceProcAddr(instance, "vkGetPhysicalDeviceProperties2"));
  if (!getProps2)
    return {};
  VkPhysicalDeviceProperties2 p2{};
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = &sub;
  getProps2(dev, &p2);
  return {sub.subgroupSize,
          (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
              (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT)};
}

/// A buffer with its own memory.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize bytes = 0;
  void *mapped = nullptr; ///< host-visible buffers only
};

} // namespace

struct VulkanDevice::Impl {
  VkFns vk;
  const ArtifactMetadata *md = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memProps{};
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkShaderModule shader = VK_NULL_HANDLE;
  struct Kernel {
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    size_t bindings = 0;
  };
  std::vector<Kernel> kernels;
  Buffer weights, kv, arena, tokens, logits, params;
  int64_t arenaBytes = 0;
  /// A recorded phase: its command buffer, descriptor sets and the shape
  /// it was recorded for.
  struct Recording {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    std::vector<int64_t> shape;
    /// Per scalar argument, its slot in `params` (launch order).
    std::vector<const ArtifactMetadata::Expr *> scalars;
    /// Profiling: a timestamp before the first step and after each, and
    /// the profile entry each step's time goes to.
    VkQueryPool queries = VK_NULL_HANDLE;
    std::vector<size_t> stepEntry;
  };
  Recording recorded[2]; // prefill, decode
  VkDeviceSize paramSlot = 16;
  /// The compute queue's valid timestamp bits (0: none).
  uint32_t timestampBits = 0;
  bool profiling = false;
  std::vector<VulkanDevice::StepTime> times;

  ~Impl();
  /// A query pool of `count` timestamps.
  VkQueryPool makeTimestamps(uint32_t count);
  /// Nanoseconds between timestamps `a` and `b` of `ticks`.
  int64_t elapsedNs(uint64_t a, uint64_t b) const;
  /// The Vulkan version the artifact's kernels were compiled for.
  uint32_t apiVersion = VK_API_VERSION_1_2;
  void openDevice(int index);
  void createPipelines();
  /// `k`'s descriptor set layout (k.bindings storage buffers of set 0), its
  /// pipeline layout and its compute pipeline of entry point `entry` in
  /// `module`; `what` names it in errors.
  void makePipeline(Kernel &k, VkShaderModule module, const char *entry,
                    const std::string &what);
  void destroy(Kernel &k);
  Buffer makeBuffer(VkDeviceSize bytes, bool hostVisible);
  void destroy(Buffer &b);
  void submitAndWait(VkCommandBuffer cb);
  void upload(Buffer &dst, const void *src, VkDeviceSize bytes);
  void fill(Buffer &dst, uint32_t value);
  void ensure(Buffer &b, VkDeviceSize bytes, bool hostVisible);
  const Buffer &rootBuffer(const std::string &name) const;
};

VulkanDevice::Impl::~Impl() {
  if (device) {
    for (Recording &r : recorded) {
      if (r.pool)
        vk.vkDestroyDescriptorPool(device, r.pool, nullptr);
      if (r.queries)
        vk.vkDestroyQueryPool(device, r.queries, nullptr);
    }
    for (Kernel &k : kernels)
      destroy(k);
    if (shader)
      vk.vkDestroyShaderModule(device, shader, nullptr);
    for (Buffer *b : {&weights, &kv, &arena, &tokens, &logits, &params})
      destroy(*b);
    if (fence)
      vk.vkDestroyFence(device, fence, nullptr);
    if (commandPool)
      vk.vkDestroyCommandPool(device, commandPool, nullptr);
    vk.vkDestroyDevice(device, nullptr);
  }
  if (instance)
    vk.vkDestroyInstance(instance, nullptr);
}

void VulkanDevice::Impl::openDevice(int index) {
  std::vector<VkPhysicalDevice> devices = physicalDevices(vk, instance);
  if (devices.empty())
    throw Error("vulkan: the loader lists no device (install a driver, e.g. "
                "mesa-vulkan-drivers for lavapipe)");
  if (index < 0 || index >= static_cast<int>(devices.size()))
    throw Error("vulkan: no device " + std::to_string(index) + " (there are " +
                std::to_string(devices.size()) +
                "; `llmc devices` lists them)");
  physical = devices[index];
  vk.vkGetPhysicalDeviceProperties(physical, &props);
  vk.vkGetPhysicalDeviceMemoryProperties(physical, &memProps);
  std::string name = props.deviceName;
  if (props.apiVersion < apiVersion)
    throw Error("vulkan: device " + std::to_string(index) + " (" + name +
                ") supports Vulkan " +
                std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) + "." +
                std::to_string(VK_API_VERSION_MINOR(props.apiVersion)) +
                "; the artifact was compiled for " +
                std::to_string(VK_API_VERSION_MAJOR(apiVersion)) + "." +
                std::to_string(VK_API_VERSION_MINOR(apiVersion)));

  // The features the kernels use, which the device must have.
  FeatureChain haveChain, wantChain;
  vk.vkGetPhysicalDeviceFeatures2(physical, &haveChain.all);
  auto &f16i8 = haveChain.f16i8, &wf16i8 = wantChain.f16i8;
  auto &s8 = haveChain.s8, &ws8 = wantChain.s8;
  auto &s16 = haveChain.s16, &ws16 = wantChain.s16;
  auto &have = haveChain.all, &want = wantChain.all;
  for (const std::string &f : md->deviceFeatures) {
    auto need = [&](const char *feature, VkBool32 present, VkBool32 &enable) {
      if (!present)
        throw Error("vulkan: device " + std::to_string(index) + " (" + name +
                    ") lacks " + feature +
                    ", which the artifact's kernels "
                    "use (compile for it with --target vulkan,...,-" +
                    f + ")");
      enable = VK_TRUE;
    };
    if (f == "int8") {
      need("shaderInt8", f16i8.shaderInt8, wf16i8.shaderInt8);
      need("storageBuffer8BitAccess", s8.storageBuffer8BitAccess,
           ws8.storageBuffer8BitAccess);
    } else if (f == "fp16") {
      need("shaderFloat16", f16i8.shaderFloat16, wf16i8.shaderFloat16);
      need("shaderInt16", have.features.shaderInt16, want.features.shaderInt16);
      need("storageBuffer16BitAccess", s16.storageBuffer16BitAccess,
           ws16.storageBuffer16BitAccess);
    } else if (f == "fp64") {
      need("shaderFloat64", have.features.shaderFloat64,
           want.features.shaderFloat64);
    } else if (f == "int64") {
      need("shaderInt64", have.features.shaderInt64, want.features.shaderInt64);
    }
  }
  // Workgroups within the device's limits.
  for (const ArtifactMetadata::DeviceKernel &k : md->deviceKernels) {
    int64_t threads = k.workgroup[0] * k.workgroup[1] * k.workgroup[2];
    bool fits = threads <= props.limits.maxComputeWorkGroupInvocations;
    for (int d = 0; d < 3; ++d)
      fits &= k.workgroup[d] <= props.limits.maxComputeWorkGroupSize[d];
    if (!fits)
      throw Error("vulkan: kernel " + k.name + "'s workgroup of " +
                  std::to_string(threads) + " threads exceeds device " +
                  std::to_string(index) + " (" + name +
                  ")'s limits (compile "
                  "with --target vulkan,...,workgroup=" +
                  std::to_string(props.limits.maxComputeWorkGroupInvocations) +
                  ")");
  }

  // Kernels whose lanes combine across a subgroup: the device's subgroups
  // must be the size they were scheduled for.
  Subgroups subgroups = subgroupsOf(vk, instance, physical);
  for (const ArtifactMetadata::DeviceKernel &k : md->deviceKernels) {
    if (!k.subgroup)
      continue;
    if (!subgroups.arithmetic)
      throw Error("vulkan: kernel " + k.name +
                  " reduces across a subgroup; device " +
                  std::to_string(index) + " (" + name +
                  ") has no subgroup arithmetic in compute shaders (compile "
                  "for it with --target vulkan,...,subgroup=1)");
    if (static_cast<int64_t>(subgroups.size) != k.subgroup)
      throw Error("vulkan: kernel " + k.name +
                  " was compiled for subgroups "
                  "of " +
                  std::to_string(k.subgroup) + "; device " +
                  std::to_string(index) + " (" + name + ") has " +
                  std::to_string(subgroups.size) +
                  " (compile for it with --target vulkan,...,subgroup=" +
                  std::to_string(subgroups.size) + ")");
  }

  uint32_t familyCount = 0;
  vk.vkGetPhysicalDeviceQueueFamilyProperties(physical, &familyCount, nullptr);
  std::vector<VkQueueFamilyProperties> families(familyCount);
  vk.vkGetPhysicalDeviceQueueFamilyProperties(physical, &familyCount,
                                              families.data());
  bool found = false;
  for (uint32_t i = 0; i < familyCount && !found; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      queueFamily = i;
      timestampBits = families[i].timestampValidBits;
      found = true;
    }
  if (!found)
    throw Error("vulkan: device " + std::to_string(index) + " (" + name +
                ") has no compute queue");
  float priority = 1.0f;
  VkDeviceQueueCreateInfo q{};
  q.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  q.queueFamilyIndex = queueFamily;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = &want;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &q;
  check(vk.vkCreateDevice(physical, &info, nullptr, &device), "vkCreateDevice");
  vk.loadDevice(device);
  vk.vkGetDeviceQueue(device, queueFamily, 0, &queue);

  VkCommandPoolCreateInfo pool{};
  pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = queueFamily;
  check(vk.vkCreateCommandPool(device, &pool, nullptr, &commandPool),
        "vkCreateCommandPool");
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  check(vk.vkCreateFence(device, &fi, nullptr, &fence), "vkCreateFence");
  paramSlot =
      std::max<VkDeviceSize>(16, props.limits.minStorageBufferOffsetAlignment);
}

void VulkanDevice::Impl::createPipelines() {
  std::string code = readFile(md->libraryPath);
  if (code.size() % 4 || code.size() < 20 ||
      *reinterpret_cast<const uint32_t *>(code.data()) != 0x07230203u)
    throw Error(md->libraryPath + ": not a SPIR-V module");
  VkShaderModuleCreateInfo sm{};
  sm.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  sm.codeSize = code.size();
  sm.pCode = reinterpret_cast<const uint32_t *>(code.data());
  // The module's entry points, checked against the launches below.
  SpirvModule spirv;
  std::string bad = reflectSpirv(sm.pCode, code.size() / 4, spirv);
  if (!bad.empty())
    throw Error(md->libraryPath + ": " + bad);
  check(vk.vkCreateShaderModule(device, &sm, nullptr, &shader),
        "vkCreateShaderModule");
  // Each kernel's bindings: as many as its launches pass arguments.
  kernels.resize(md->deviceKernels.size());
  for (const auto *phase : {&md->prefill, &md->decode})
    for (const ArtifactMetadata::Launch &l : *phase) {
      if (l.copy)
        continue;
      size_t &n = kernels[l.kernel].bindings;
      if (n && n != l.args.size())
        throw Error(md->metadataPath + ": kernel " +
                    md->deviceKernels[l.kernel].name +
                    " is launched with different argument counts");
      n = l.args.size();
    }
  std::vector<bool> launched(kernels.size(), false);
  for (const auto *phase : {&md->prefill, &md->decode})
    for (const ArtifactMetadata::Launch &l : *phase)
      if (!l.copy)
        launched[l.kernel] = true;
  for (size_t k = 0; k < kernels.size(); ++k) {
    Kernel &kernel = kernels[k];
    if (!launched[k])
      continue; // no pipeline for a kernel nothing launches
    const std::string &name = md->deviceKernels[k].name;
    auto entry =
        std::find_if(spirv.entryPoints.begin(), spirv.entryPoints.end(),
                     [&](const SpirvEntryPoint &e) { return e.name == name; });
    if (entry == spirv.entryPoints.end() || entry->executionModel != 5)
      throw Error(md->libraryPath + ": no compute entry point '" + name +
                  "', which " + md->metadataPath + " launches");
    if (spirv.interfacesComplete())
      for (auto [set, binding] : entry->bindings)
        if (set != 0 || binding >= kernel.bindings)
          throw Error(md->libraryPath + ": entry point '" + name +
                      "' uses descriptor set " + std::to_string(set) +
                      " binding " + std::to_string(binding) + ", but " +
                      md->metadataPath + " binds " +
                      std::to_string(kernel.bindings) +
                      " buffers of set 0 for it");
    if (kernel.bindings > props.limits.maxPerStageDescriptorStorageBuffers)
      throw Error(
          "vulkan: kernel " + md->deviceKernels[k].name + " binds " +
          std::to_string(kernel.bindings) + " buffers; the device " +
          "allows " +
          std::to_string(props.limits.maxPerStageDescriptorStorageBuffers));
    makePipeline(kernel, shader, md->deviceKernels[k].name.c_str(),
                 md->deviceKernels[k].name);
  }
}

void VulkanDevice::Impl::makePipeline(Kernel &k, VkShaderModule module,
                                      const char *entry,
                                      const std::string &what) {
  std::vector<VkDescriptorSetLayoutBinding> bindings(k.bindings);
  for (size_t i = 0; i < bindings.size(); ++i) {
    bindings[i].binding = static_cast<uint32_t>(i);
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dl{};
  dl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  dl.bindingCount = static_cast<uint32_t>(bindings.size());
  dl.pBindings = bindings.data();
  check(vk.vkCreateDescriptorSetLayout(device, &dl, nullptr, &k.setLayout),
        "vkCreateDescriptorSetLayout");
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &k.setLayout;
  check(vk.vkCreatePipelineLayout(device, &pl, nullptr, &k.layout),
        "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo cp{};
  cp.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  cp.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cp.stage.module = module;
  cp.stage.pName = entry;
  cp.layout = k.layout;
  check(vk.vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cp, nullptr,
                                    &k.pipeline),
        ("vkCreateComputePipelines for " + what).c_str());
}

void VulkanDevice::Impl::destroy(Kernel &k) {
  if (k.pipeline)
    vk.vkDestroyPipeline(device, k.pipeline, nullptr);
  if (k.layout)
    vk.vkDestroyPipelineLayout(device, k.layout, nullptr);
  if (k.setLayout)
    vk.vkDestroyDescriptorSetLayout(device, k.setLayout, nullptr);
  k = Kernel{};
}

Buffer VulkanDevice::Impl::makeBuffer(VkDeviceSize bytes, bool hostVisible) {
  Buffer b;
  b.bytes = std::max<VkDeviceSize>(bytes, 16);
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = b.bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vk.vkCreateBuffer(device, &info, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vk.vkGetBufferMemoryRequirements(device, b.buffer, &req);
  VkMemoryPropertyFlags wanted = hostVisible
                                     ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                           VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                     : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  uint32_t type = UINT32_MAX;
  for (uint32_t i = 0; i < memProps.memoryTypeCount; ++i)
    if ((req.memoryTypeBits & (1u << i)) &&
        (memProps.memoryTypes[i].propertyFlags & wanted) == wanted) {
      type = i;
      break;
    }
  if (type == UINT32_MAX)
    throw Error("vulkan: no memory type for a buffer of " +
                std::to_string(bytes) + " bytes");
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  VkResult r = vk.vkAllocateMemory(device, &alloc, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vk.vkDestroyBuffer(device, b.buffer, nullptr);
    throw Error("vulkan: cannot allocate " + std::to_string(req.size) +
                " bytes of device memory (VkResult " +
                std::to_string(static_cast<int>(r)) + ")");
  }
  VkResult bound = vk.vkBindBufferMemory(device, b.buffer, b.memory, 0);
  if (bound == VK_SUCCESS && hostVisible)
    bound = vk.vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
  if (bound != VK_SUCCESS) {
    destroy(b);
    check(bound, hostVisible ? "vkBindBufferMemory/vkMapMemory"
                             : "vkBindBufferMemory");
  }
  return b;
}

void VulkanDevice::Impl::destroy(Buffer &b) {
  if (b.buffer)
    vk.vkDestroyBuffer(device, b.buffer, nullptr);
  if (b.memory)
    vk.vkFreeMemory(device, b.memory, nullptr);
  b = Buffer();
}

void VulkanDevice::Impl::submitAndWait(VkCommandBuffer cb) {
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  check(vk.vkResetFences(device, 1, &fence), "vkResetFences");
  check(vk.vkQueueSubmit(queue, 1, &submit, fence), "vkQueueSubmit");
  check(vk.vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX),
        "vkWaitForFences");
}

VkQueryPool VulkanDevice::Impl::makeTimestamps(uint32_t count) {
  VkQueryPoolCreateInfo qi{};
  qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = std::max<uint32_t>(count, 1);
  VkQueryPool pool = VK_NULL_HANDLE;
  check(vk.vkCreateQueryPool(device, &qi, nullptr, &pool), "vkCreateQueryPool");
  return pool;
}

int64_t VulkanDevice::Impl::elapsedNs(uint64_t a, uint64_t b) const {
  uint64_t mask =
      timestampBits >= 64 ? ~uint64_t(0) : (uint64_t(1) << timestampBits) - 1;
  uint64_t ticks = ((b & mask) - (a & mask)) & mask;
  return static_cast<int64_t>(static_cast<double>(ticks) *
                              props.limits.timestampPeriod);
}

/// One-off commands: `record` fills a fresh command buffer, which is
/// submitted and waited for.
template <typename Fn> static void oneShot(VulkanDevice::Impl &d, Fn record) {
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = d.commandPool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  check(d.vk.vkAllocateCommandBuffers(d.device, &ai, &cb),
        "vkAllocateCommandBuffers");
  try {
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(d.vk.vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
    record(cb);
    check(d.vk.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    d.submitAndWait(cb);
  } catch (...) {
    d.vk.vkFreeCommandBuffers(d.device, d.commandPool, 1, &cb);
    throw;
  }
  d.vk.vkFreeCommandBuffers(d.device, d.commandPool, 1, &cb);
}

void VulkanDevice::Impl::upload(Buffer &dst, const void *src,
                                VkDeviceSize bytes) {
  // Through a host-visible staging buffer, a chunk at a time.
  const VkDeviceSize chunk = std::min<VkDeviceSize>(bytes, 64u << 20);
  Buffer staging = makeBuffer(chunk, true);
  try {
    for (VkDeviceSize at = 0; at < bytes; at += chunk) {
      VkDeviceSize n = std::min(chunk, bytes - at);
      std::memcpy(staging.mapped, static_cast<const char *>(src) + at, n);
      oneShot(*this, [&](VkCommandBuffer cb) {
        VkBufferCopy region{0, at, n};
        vk.vkCmdCopyBuffer(cb, staging.buffer, dst.buffer, 1, &region);
      });
    }
  } catch (...) {
    destroy(staging);
    throw;
  }
  destroy(staging);
}

void VulkanDevice::Impl::fill(Buffer &dst, uint32_t value) {
  oneShot(*this, [&](VkCommandBuffer cb) {
    vk.vkCmdFillBuffer(cb, dst.buffer, 0, VK_WHOLE_SIZE, value);
  });
}

void VulkanDevice::Impl::ensure(Buffer &b, VkDeviceSize bytes,
                                bool hostVisible) {
  if (b.buffer && b.bytes >= bytes)
    return;
  destroy(b);
  b = makeBuffer(bytes, hostVisible);
  // Recordings bind buffers by handle: record again.
  for (Recording &r : recorded)
    r.shape.clear();
}

const Buffer &VulkanDevice::Impl::rootBuffer(const std::string &name) const {
  if (name == "weights")
    return weights;
  if (name == "kv")
    return kv;
  if (name == "arena")
    return arena;
  if (name == "tokens")
    return tokens;
  return logits;
}

VulkanDevice::VulkanDevice(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
VulkanDevice::~VulkanDevice() = default;

int deviceIndex() {
  if (const char *s = std::getenv("LLMC_DEVICE")) {
    char *end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > 1000)
      throw Error(std::string("LLMC_DEVICE: expected a device number, got \"") +
                  s + "\"");
    return static_cast<int>(v);
  }
  return 0;
}

std::unique_ptr<VulkanDevice> VulkanDevice::open(const ArtifactMetadata &md,
                                                 const void *weightData,
                                                 int64_t weightBytes) {
  auto d = std::make_unique<Impl>();
  d->md = &md;
  d->vk.loadLoader();
  // "vulkan:1.3,...": the version the kernels' SPIR-V was made for.
  if (md.targetDescription.rfind("vulkan:1.3", 0) == 0)
    d->apiVersion = VK_API_VERSION_1_3;
  d->instance = createInstance(d->vk, d->apiVersion);
  d->openDevice(deviceIndex());
  d->createPipelines();
  d->weights = d->makeBuffer(weightBytes, false);
  d->upload(d->weights, weightData, weightBytes);
  int64_t kvBytes = md.kvCacheElementBytes;
  for (int64_t e : md.kvCacheShape)
    kvBytes *= e;
  d->kv = d->makeBuffer(kvBytes, false);
  d->fill(d->kv, 0);
  d->tokens = d->makeBuffer(md.maxSeqLen * 4, true);
  return std::unique_ptr<VulkanDevice>(new VulkanDevice(std::move(d)));
}

void VulkanDevice::forward(const int32_t *tokenIds, int64_t n, int64_t pos0,
                           float *out, int64_t rows) {
  Impl &d = *impl;
  const ArtifactMetadata &md = *d.md;
  bool decode = n == 1 && !md.decode.empty();
  const std::vector<ArtifactMetadata::Launch> &launches =
      decode ? md.decode : md.prefill;
  Impl::Recording &rec = d.recorded[decode ? 1 : 0];
  int64_t arenaNeed = md.arenaBytes(n, pos0, rows);
  d.ensure(d.arena, std::max<int64_t>(arenaNeed, 64), false);
  d.ensure(d.logits, rows * md.vocabSize * 4, true);
  ArtifactMetadata::CallSizes sizes;
  sizes.tokens = n;
  sizes.pos0 = pos0;
  sizes.nOut = rows;
  sizes.weightsBytes = md.weightsBytes;
  sizes.arenaBytes = static_cast<int64_t>(d.arena.bytes);
  sizes.tokenIds = tokenIds;
  std::memcpy(d.tokens.mapped, tokenIds, n * sizeof(int32_t));

  // The shape: every grid, offset and extent; scalars go to `params`.
  std::vector<int64_t> shape;
  size_t scalarCount = 0;
  for (const ArtifactMetadata::Launch &l : launches) {
    if (l.copy) {
      for (const ArtifactMetadata::Expr *e :
           {&l.src.offset, &l.dst.offset, &l.bytes})
        shape.push_back(ArtifactMetadata::evaluate(*e, sizes));
      continue;
    }
    for (const ArtifactMetadata::Expr &g : l.grid)
      shape.push_back(ArtifactMetadata::evaluate(g, sizes));
    for (const ArtifactMetadata::DeviceArg &a : l.args) {
      if (a.scalar) {
        ++scalarCount;
        continue;
      }
      shape.push_back(ArtifactMetadata::evaluate(a.offset, sizes));
      shape.push_back(ArtifactMetadata::evaluate(a.bytes, sizes));
    }
  }
  d.ensure(d.params, std::max<size_t>(scalarCount, 1) * d.paramSlot, true);
  if (shape != rec.shape) {
    // Check the shape's bindings, copies and grids against the buffers and
    // the device before recording anything, so that an error leaves no
    // half-recorded phase behind.
    size_t at = 0;
    for (const ArtifactMetadata::Launch &l : launches) {
      if (l.copy) {
        int64_t from = shape[at++], to = shape[at++], bytes = shape[at++];
        const Buffer &src = d.rootBuffer(l.src.buffer);
        const Buffer &dst = d.rootBuffer(l.dst.buffer);
        if (from < 0 || to < 0 || bytes < 0 ||
            static_cast<VkDeviceSize>(from + bytes) > src.bytes ||
            static_cast<VkDeviceSize>(to + bytes) > dst.bytes)
          throw Error("vulkan: a copy of " + std::to_string(bytes) +
                      " bytes from the " + l.src.buffer + " buffer at " +
                      std::to_string(from) + " to the " + l.dst.buffer +
                      " buffer at " + std::to_string(to) +
                      " leaves the buffers");
        continue;
      }
      const std::string &kname = md.deviceKernels[l.kernel].name;
      for (int g = 0; g < 3; ++g) {
        int64_t n = shape[at++];
        if (n > 0 && static_cast<uint64_t>(n) >
                         d.props.limits.maxComputeWorkGroupCount[g])
          throw Error(
              "vulkan: kernel " + kname + " needs " + std::to_string(n) +
              " workgroups on an axis; the device runs at most " +
              std::to_string(d.props.limits.maxComputeWorkGroupCount[g]));
      }
      for (const ArtifactMetadata::DeviceArg &a : l.args) {
        if (a.scalar)
          continue;
        int64_t offset = shape[at++], bytes = shape[at++];
        const Buffer &root = d.rootBuffer(a.buffer);
        // A binding spans at least one 4-byte element.
        int64_t span = std::max<int64_t>(bytes, 4);
        if (offset < 0 || bytes < 0 ||
            static_cast<VkDeviceSize>(offset + span) > root.bytes)
          throw Error("vulkan: kernel " + kname + " binds bytes [" +
                      std::to_string(offset) + ", " +
                      std::to_string(offset + span) + ") of the " + a.buffer +
                      " buffer of " + std::to_string(root.bytes));
        if (offset % d.props.limits.minStorageBufferOffsetAlignment)
          throw Error(
              "vulkan: kernel " + kname + " binds the " + a.buffer +
              " buffer at offset " + std::to_string(offset) +
              ", not a multiple of the device's " +
              std::to_string(d.props.limits.minStorageBufferOffsetAlignment));
        if (static_cast<uint64_t>(span) > d.props.limits.maxStorageBufferRange)
          throw Error("vulkan: kernel " + kname + " binds " +
                      std::to_string(span) + " bytes of the " + a.buffer +
                      " buffer; the device binds at most " +
                      std::to_string(d.props.limits.maxStorageBufferRange) +
                      " bytes at once");
      }
    }
    // Record the phase for this shape (forgotten until it is complete).
    rec.shape.clear();
    rec.scalars.clear();
    if (rec.pool)
      d.vk.vkDestroyDescriptorPool(d.device, rec.pool, nullptr);
    rec.pool = VK_NULL_HANDLE;
    size_t bindingCount = 0, kernelLaunches = 0;
    for (const ArtifactMetadata::Launch &l : launches)
      bindingCount += l.args.size(), kernelLaunches += !l.copy;
    VkDescriptorPoolSize ps{
        VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        static_cast<uint32_t>(std::max<size_t>(bindingCount, 1))};
    VkDescriptorPoolCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pi.maxSets = static_cast<uint32_t>(std::max<size_t>(kernelLaunches, 1));
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    check(d.vk.vkCreateDescriptorPool(d.device, &pi, nullptr, &rec.pool),
          "vkCreateDescriptorPool");
    if (rec.queries)
      d.vk.vkDestroyQueryPool(d.device, rec.queries, nullptr);
    rec.queries = VK_NULL_HANDLE;
    rec.stepEntry.clear();
    if (d.profiling)
      rec.queries =
          d.makeTimestamps(static_cast<uint32_t>(launches.size() + 1));
    if (!rec.commands) {
      VkCommandBufferAllocateInfo ai{};
      ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
      ai.commandPool = d.commandPool;
      ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      ai.commandBufferCount = 1;
      check(d.vk.vkAllocateCommandBuffers(d.device, &ai, &rec.commands),
            "vkAllocateCommandBuffers");
    } else {
      check(d.vk.vkResetCommandBuffer(rec.commands, 0), "vkResetCommandBuffer");
    }
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    check(d.vk.vkBeginCommandBuffer(rec.commands, &bi), "vkBeginCommandBuffer");
    // Every step sees all that the steps (and the submissions, uploads and
    // host writes) before it wrote: a full memory barrier before the first
    // step and after the last, and between steps wherever one overlaps
    // what the steps since the last barrier read or wrote with either
    // writing (HazardTracker; steps that only share what they read, such
    // as Q, K and V of a token, run without one). Profiling times each
    // step alone: a barrier before every step.
    VkMemoryBarrier full{};
    full.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    full.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT |
                         VK_ACCESS_HOST_WRITE_BIT;
    full.dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
                         VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                        VK_PIPELINE_STAGE_TRANSFER_BIT |
                                        VK_PIPELINE_STAGE_HOST_BIT;
    auto barrier = [&] {
      d.vk.vkCmdPipelineBarrier(rec.commands, stages, stages, 0, 1, &full, 0,
                                nullptr, 0, nullptr);
    };
    HazardTracker hazards;
    bool first = true;
    auto waitFor = [&](const std::vector<HazardTracker::Access> &accesses) {
      if (first || rec.queries || hazards.conflicts(accesses)) {
        barrier();
        hazards.clear();
      }
      first = false;
      hazards.add(accesses);
    };
    // Profiling: timestamp 0 before the first step, i + 1 after step i
    // (whose barrier waited for step i - 1): the difference is step i's.
    std::vector<size_t> stepEntry;
    auto stamp = [&](size_t entry) {
      if (!rec.queries)
        return;
      d.vk.vkCmdWriteTimestamp(
          rec.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, rec.queries,
          static_cast<uint32_t>(stepEntry.size() + 1));
      stepEntry.push_back(entry);
    };
    if (rec.queries) {
      d.vk.vkCmdResetQueryPool(rec.commands, rec.queries, 0,
                               static_cast<uint32_t>(launches.size() + 1));
      d.vk.vkCmdWriteTimestamp(rec.commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                               rec.queries, 0);
    }
    std::vector<const ArtifactMetadata::Expr *> scalars;
    at = 0;
    for (const ArtifactMetadata::Launch &l : launches) {
      if (l.copy) {
        int64_t from = shape[at++], to = shape[at++], bytes = shape[at++];
        if (bytes == 0)
          continue;
        VkBuffer src = d.rootBuffer(l.src.buffer).buffer,
                 dst = d.rootBuffer(l.dst.buffer).buffer;
        waitFor(
            {{src, from, from + bytes, false}, {dst, to, to + bytes, true}});
        VkBufferCopy region{static_cast<VkDeviceSize>(from),
                            static_cast<VkDeviceSize>(to),
                            static_cast<VkDeviceSize>(bytes)};
        d.vk.vkCmdCopyBuffer(rec.commands, src, dst, 1, &region);
        stamp(md.deviceKernels.size());
        continue;
      }
      const Impl::Kernel &k = d.kernels[l.kernel];
      VkDescriptorSetAllocateInfo si{};
      si.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
      si.descriptorPool = rec.pool;
      si.descriptorSetCount = 1;
      si.pSetLayouts = &k.setLayout;
      VkDescriptorSet set;
      check(d.vk.vkAllocateDescriptorSets(d.device, &si, &set),
            "vkAllocateDescriptorSets");
      std::vector<VkDescriptorBufferInfo> infos(l.args.size());
      std::vector<VkWriteDescriptorSet> writes(l.args.size());
      int64_t grid[3];
      for (int g = 0; g < 3; ++g)
        grid[g] = shape[at++];
      std::vector<HazardTracker::Access> accesses;
      for (size_t i = 0; i < l.args.size(); ++i) {
        const ArtifactMetadata::DeviceArg &a = l.args[i];
        if (a.scalar) {
          infos[i] = {d.params.buffer, scalars.size() * d.paramSlot, 4};
          scalars.push_back(&a.value);
        } else {
          int64_t offset = shape[at++], bytes = shape[at++];
          infos[i] = {d.rootBuffer(a.buffer).buffer,
                      static_cast<VkDeviceSize>(offset),
                      static_cast<VkDeviceSize>(std::max<int64_t>(bytes, 4))};
          accesses.push_back({infos[i].buffer, offset,
                              offset + std::max<int64_t>(bytes, 4), a.writes});
        }
        writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[i].dstSet = set;
        writes[i].dstBinding = static_cast<uint32_t>(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
      }
      d.vk.vkUpdateDescriptorSets(d.device,
                                  static_cast<uint32_t>(writes.size()),
                                  writes.data(), 0, nullptr);
      if (grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0)
        continue; // nothing to run at this size
      waitFor(accesses);
      d.vk.vkCmdBindPipeline(rec.commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                             k.pipeline);
      d.vk.vkCmdBindDescriptorSets(rec.commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                                   k.layout, 0, 1, &set, 0, nullptr);
      d.vk.vkCmdDispatch(rec.commands, static_cast<uint32_t>(grid[0]),
                         static_cast<uint32_t>(grid[1]),
                         static_cast<uint32_t>(grid[2]));
      stamp(l.kernel);
    }
    barrier();
    check(d.vk.vkEndCommandBuffer(rec.commands), "vkEndCommandBuffer");
    rec.scalars = std::move(scalars);
    rec.stepEntry = std::move(stepEntry);
    rec.shape = std::move(shape);
  }
  // This call's scalars, then the recorded commands.
  auto *slots = static_cast<char *>(d.params.mapped);
  for (size_t i = 0; i < rec.scalars.size(); ++i) {
    int64_t v = ArtifactMetadata::evaluate(*rec.scalars[i], sizes);
    if (v < INT32_MIN || v > INT32_MAX)
      throw Error("vulkan: a kernel's scalar argument is " + std::to_string(v) +
                  ", past the 32-bit integers the kernels index with");
    int32_t v32 = static_cast<int32_t>(v);
    std::memcpy(slots + i * d.paramSlot, &v32, 4);
  }
  d.submitAndWait(rec.commands);
  if (rec.queries && !rec.stepEntry.empty()) {
    std::vector<uint64_t> stamps(rec.stepEntry.size() + 1);
    check(d.vk.vkGetQueryPoolResults(
              d.device, rec.queries, 0, static_cast<uint32_t>(stamps.size()),
              stamps.size() * sizeof(uint64_t), stamps.data(), sizeof(uint64_t),
              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    for (size_t i = 0; i < rec.stepEntry.size(); ++i) {
      StepTime &t = d.times[rec.stepEntry[i]];
      t.calls += 1;
      t.nanoseconds += d.elapsedNs(stamps[i], stamps[i + 1]);
    }
  }
  std::memcpy(out, d.logits.mapped, rows * md.vocabSize * sizeof(float));
}

void VulkanDevice::enableProfile() {
  Impl &d = *impl;
  if (!d.timestampBits || d.props.limits.timestampPeriod <= 0)
    throw Error(std::string("vulkan: device ") + d.props.deviceName +
                "'s compute queue keeps no timestamps, which a profiled "
                "artifact reads (compile it without --profile)");
  d.profiling = true;
  // Recorded phases have no timestamps: record them again.
  for (Impl::Recording &r : d.recorded)
    r.shape.clear();
  resetProfile();
}

const std::vector<VulkanDevice::StepTime> &VulkanDevice::profile() const {
  return impl->times;
}

void VulkanDevice::resetProfile() {
  if (impl->profiling)
    impl->times.assign(impl->md->deviceKernels.size() + 1, StepTime());
}

/// The read-bandwidth probe's compute shader (probe/read.spvasm, assembled
/// by probe/assemble.py).
static const uint32_t kReadProbe[] = {
#include "probe/read.inc"
};

double VulkanDevice::readBandwidth(int64_t bytes, int passes) {
  Impl &d = *impl;
  // 16-byte elements, each invocation about 16 of them (a grid-stride loop
  // over 256-thread workgroups), at most Vulkan's guaranteed grid.
  bytes = std::max<int64_t>(bytes / 16 * 16, 16);
  int64_t elements = bytes / 16;
  uint32_t groups = static_cast<uint32_t>(
      std::clamp<int64_t>(elements / (256 * 16), 1, 65535));
  VkDeviceSize sinkBytes = VkDeviceSize(groups) * 256 * 4;
  Buffer src, sink;
  VkShaderModule module = VK_NULL_HANDLE;
  Impl::Kernel probe;
  probe.bindings = 2;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkQueryPool stampsPool = VK_NULL_HANDLE;
  auto release = [&] {
    if (stampsPool)
      d.vk.vkDestroyQueryPool(d.device, stampsPool, nullptr);
    if (pool)
      d.vk.vkDestroyDescriptorPool(d.device, pool, nullptr);
    d.destroy(probe);
    if (module)
      d.vk.vkDestroyShaderModule(d.device, module, nullptr);
    d.destroy(src);
    d.destroy(sink);
  };
  double best = 0;
  try {
    src = d.makeBuffer(bytes, false);
    sink = d.makeBuffer(sinkBytes, false);
    d.fill(src, 0x3f800000u);
    VkShaderModuleCreateInfo sm{};
    sm.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    sm.codeSize = sizeof kReadProbe;
    sm.pCode = kReadProbe;
    check(d.vk.vkCreateShaderModule(d.device, &sm, nullptr, &module),
          "vkCreateShaderModule (bandwidth probe)");
    d.makePipeline(probe, module, "main", "the bandwidth probe");
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dp{};
    dp.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    dp.maxSets = 1;
    dp.poolSizeCount = 1;
    dp.pPoolSizes = &size;
    check(d.vk.vkCreateDescriptorPool(d.device, &dp, nullptr, &pool),
          "vkCreateDescriptorPool (bandwidth probe)");
    VkDescriptorSetAllocateInfo si{};
    si.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    si.descriptorPool = pool;
    si.descriptorSetCount = 1;
    si.pSetLayouts = &probe.setLayout;
    VkDescriptorSet set;
    check(d.vk.vkAllocateDescriptorSets(d.device, &si, &set),
          "vkAllocateDescriptorSets (bandwidth probe)");
    VkDescriptorBufferInfo infos[2] = {
        {src.buffer, 0, static_cast<VkDeviceSize>(bytes)},
        {sink.buffer, 0, sinkBytes}};
    VkWriteDescriptorSet writes[2]{};
    for (uint32_t i = 0; i < 2; ++i) {
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstSet = set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    d.vk.vkUpdateDescriptorSets(d.device, 2, writes, 0, nullptr);
    bool stamps = d.timestampBits && d.props.limits.timestampPeriod > 0;
    if (stamps)
      stampsPool = d.makeTimestamps(2);
    for (int p = 0; p < passes; ++p) {
      auto t0 = std::chrono::steady_clock::now();
      oneShot(d, [&](VkCommandBuffer cb) {
        if (stampsPool) {
          d.vk.vkCmdResetQueryPool(cb, stampsPool, 0, 2);
          d.vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                                   stampsPool, 0);
        }
        d.vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                               probe.pipeline);
        d.vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE,
                                     probe.layout, 0, 1, &set, 0, nullptr);
        d.vk.vkCmdDispatch(cb, groups, 1, 1);
        if (stampsPool)
          d.vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                                   stampsPool, 1);
      });
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      if (stampsPool) {
        uint64_t ts[2];
        check(d.vk.vkGetQueryPoolResults(
                  d.device, stampsPool, 0, 2, sizeof ts, ts, sizeof(uint64_t),
                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
              "vkGetQueryPoolResults");
        seconds = d.elapsedNs(ts[0], ts[1]) * 1e-9;
      }
      if (seconds > 0)
        best = std::max(best, static_cast<double>(bytes) / seconds);
    }
  } catch (...) {
    release();
    throw;
  }
  release();
  return best;
}

std::vector<std::string> VulkanDevice::list() {
  VkFns vk;
  vk.loadLoader();
  VkInstance instance = createInstance(vk, VK_API_VERSION_1_2);
  std::vector<std::string> out;
  std::vector<VkPhysicalDevice> devices = physicalDevices(vk, instance);
  for (size_t i = 0; i < devices.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vk.vkGetPhysicalDeviceProperties(devices[i], &p);
    out.push_back(std::to_string(i) + ": " + p.deviceName + " (" +
                  deviceTypeName(p.deviceType) + ", Vulkan " +
                  std::to_string(VK_API_VERSION_MAJOR(p.apiVersion)) + "." +
                  std::to_string(VK_API_VERSION_MINOR(p.apiVersion)) + ")");
  }
  vk.vkDestroyInstance(instance, nullptr);
  return out;
}

std::string VulkanDevice::describe(int index) {
  VkFns vk;
  vk.loadLoader();
  VkInstance instance = createInstance(vk, VK_API_VERSION_1_2);
  std::string out;
  try {
    std::vector<VkPhysicalDevice> devices = physicalDevices(vk, instance);
    if (index < 0 || index >= static_cast<int>(devices.size()))
      throw Error("vulkan: no device " + std::to_string(index) +
                  " (there are " + std::to_string(devices.size()) + ")");
    VkPhysicalDevice dev = devices[index];
    VkPhysicalDeviceProperties p;
    vk.vkGetPhysicalDeviceProperties(dev, &p);
    Subgroups sub = subgroupsOf(vk, instance, dev);
    FeatureChain chain;
    vk.vkGetPhysicalDeviceFeatures2(dev, &chain.all);
    auto &f16i8 = chain.f16i8;
    auto &s8 = chain.s8;
    auto &s16 = chain.s16;
    auto &f = chain.all;
    bool v13 = VK_API_VERSION_MINOR(p.apiVersion) >= 3 ||
               VK_API_VERSION_MAJOR(p.apiVersion) > 1;
    // llmc's target spelling (docs/design.md, Targets): the features that
    // differ from bare vulkan's (fp16, int8, int64 on; fp64 off), then the
    // limits; a workgroup and subgroup of powers of two.
    auto pow2Floor = [](uint64_t v) {
      uint64_t r = 1;
      while (r * 2 <= v)
        r *= 2;
      return r;
    };
    bool fp16 = f16i8.shaderFloat16 && s16.storageBuffer16BitAccess &&
                f.features.shaderInt16;
    bool int8 = f16i8.shaderInt8 && s8.storageBuffer8BitAccess;
    out = std::string("vulkan:") + (v13 ? "1.3" : "1.2");
    if (f.features.shaderFloat64)
      out += ",+fp64";
    if (!fp16)
      out += ",-fp16";
    if (!int8)
      out += ",-int8";
    if (!f.features.shaderInt64)
      out += ",-int64";
    // Without subgroup arithmetic, subgroups of one: the schedule then
    // sums a workgroup's lanes in workgroup memory only.
    uint64_t subgroup = !sub.arithmetic ? 1 : sub.size ? sub.size : 32;
    uint64_t workgroup = std::min<uint64_t>(
        1024, pow2Floor(p.limits.maxComputeWorkGroupInvocations));
    out += ",subgroup=" + std::to_string(pow2Floor(subgroup)) + ",workgroup=" +
           std::to_string(std::max<uint64_t>(workgroup, pow2Floor(subgroup))) +
           ",shared=" + std::to_string(p.limits.maxComputeSharedMemorySize) +
           ",range=" + std::to_string(p.limits.maxStorageBufferRange);
    // A CPU device's workgroup memory is ordinary memory (no staging).
    if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
      out += ",device=cpu";
  } catch (...) {
    vk.vkDestroyInstance(instance, nullptr);
    throw;
  }
  vk.vkDestroyInstance(instance, nullptr);
  return out;
}

} // namespace llmc::rt
