#include "runtime/gpu_adapter.h"

#include <mutex>

#if EDGECV_WITH_VULKAN
#define VK_NO_PROTOTYPES  // every entry point comes from the loader opened at run time
#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <cstdio>
#include <vector>
#endif

namespace edgecv {

#if EDGECV_WITH_VULKAN
namespace {

std::string VendorName(uint32_t id) {
  switch (id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x8086:
      return "Intel";
    case 0x1002:
      return "AMD";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x1AE0:
      return "Google";  // SwiftShader
    case 0x10005:
      return "Mesa";  // lavapipe (VK_VENDOR_ID_MESA)
    default: {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%04x", id);
      return hex;
    }
  }
}

const char* TypeName(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

// Lower is preferred, in the order Dawn ranks adapters for a high-performance device.
int Rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 4;
    default:
      return 3;
  }
}

std::string VersionString(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

struct LoaderHandle {
  void* handle = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  ~LoaderHandle() {
    if (handle) dlclose(handle);
  }
};

GpuAdapter Probe() {
  GpuAdapter adapter;
  const LoaderHandle loader;
  if (!loader.handle) {
    adapter.why = "no Vulkan loader (libvulkan.so.1; Debian: libvulkan1)";
    return adapter;
  }
  auto getProc = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(loader.handle, "vkGetInstanceProcAddr"));
  auto createInstance =
      getProc ? reinterpret_cast<PFN_vkCreateInstance>(getProc(nullptr, "vkCreateInstance")) : nullptr;
  if (!createInstance) {
    adapter.why = "libvulkan.so.1 is not a Vulkan loader";
    return adapter;
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "edgecv";
  app.apiVersion = VK_API_VERSION_1_1;  // for vkGetPhysicalDeviceProperties2
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  const VkResult created = createInstance(&info, nullptr, &instance);
  if (created != VK_SUCCESS) {
    // VK_ERROR_INCOMPATIBLE_DRIVER: no usable driver (no ICD installed, or the one named cannot be loaded).
    adapter.why = created == VK_ERROR_INCOMPATIBLE_DRIVER ? "no Vulkan driver (ICD) could be loaded"
                                                          : "vkCreateInstance failed (" + std::to_string(created) + ")";
    return adapter;
  }
  const auto destroy = reinterpret_cast<PFN_vkDestroyInstance>(getProc(instance, "vkDestroyInstance"));
  const auto enumerate =
      reinterpret_cast<PFN_vkEnumeratePhysicalDevices>(getProc(instance, "vkEnumeratePhysicalDevices"));
  const auto properties =
      reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(getProc(instance, "vkGetPhysicalDeviceProperties"));
  const auto properties2 =
      reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(getProc(instance, "vkGetPhysicalDeviceProperties2"));
  uint32_t count = 0;
  std::vector<VkPhysicalDevice> devices;
  if (enumerate && properties && enumerate(instance, &count, nullptr) == VK_SUCCESS && count > 0) {
    devices.resize(count);
    if (enumerate(instance, &count, devices.data()) != VK_SUCCESS) devices.clear();
    devices.resize(count);
  }
  adapter.adapters = static_cast<int>(devices.size());
  int best = -1;
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceProperties p{};
    properties(device, &p);
    if (best >= 0 && Rank(p.deviceType) >= best) continue;
    best = Rank(p.deviceType);
    adapter.found = true;
    adapter.vendor = VendorName(p.vendorID);
    adapter.device = p.deviceName;
    adapter.type = TypeName(p.deviceType);
    adapter.api = VersionString(p.apiVersion);
    adapter.software = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    adapter.driver.clear();
    if (properties2 && p.apiVersion >= VK_API_VERSION_1_2) {
      VkPhysicalDeviceDriverProperties driver{};
      driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
      VkPhysicalDeviceProperties2 p2{};
      p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
      p2.pNext = &driver;
      properties2(device, &p2);
      adapter.driver =
          std::string(driver.driverName) + (driver.driverInfo[0] ? std::string(" ") + driver.driverInfo : "");
    }
  }
  if (destroy) destroy(instance, nullptr);
  if (!adapter.found) adapter.why = "the Vulkan loader lists no device";
  return adapter;
}

}  // namespace

const GpuAdapter& FindGpuAdapter() {
  static std::once_flag once;
  static GpuAdapter adapter;
  std::call_once(once, [] { adapter = Probe(); });
  return adapter;
}

#else  // built without the Vulkan headers

const GpuAdapter& FindGpuAdapter() {
  static const GpuAdapter none{false, "this edgecv addon was built without Vulkan headers (Debian: libvulkan-dev)"};
  return none;
}

#endif

}  // namespace edgecv
