// The Vulkan adapter onnxruntime's WebGPU execution provider (Dawn over Vulkan) runs on, found by asking the Vulkan
// loader ourselves: Dawn does not say which adapter it took, and the engine needs its name, its vendor and whether it
// is a software rasterizer (lavapipe, llvmpipe, SwiftShader: the CPU emulating a GPU, good for tests, never for
// speed) before it trusts a net to it.
//
// The loader (libvulkan.so.1) is opened with dlopen(), as Dawn does, so the addon loads and runs without it.
// Compiled out when CMake found no Vulkan headers (EDGECV_WITH_VULKAN=0): then no adapter is ever found.
#pragma once

#include <string>

namespace edgecv {

struct GpuAdapter {
  bool found = false;
  std::string why;     // when none was found: the reason, for the start-up log and /server/capabilities/
  std::string vendor;  // "NVIDIA", "Intel", "AMD", "Mesa" (lavapipe), or the PCI vendor id in hex
  std::string device;  // the driver's device name, e.g. "NVIDIA H200" or "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string driver;  // driver name and version where the driver says them (Vulkan 1.2), e.g. "llvmpipe Mesa 25.0.7"
  std::string type;    // "discrete", "integrated", "virtual", "cpu" or "other"
  std::string api;     // the Vulkan version the device supports, e.g. "1.4.305"
  bool software = false;  // a CPU device (VK_PHYSICAL_DEVICE_TYPE_CPU): `auto` never picks it
  int adapters = 0;       // Vulkan devices the loader listed
};

// The adapter Dawn prefers for a high-performance device: discrete, then integrated, virtual, other, CPU (the first
// of each kind in the loader's order). Asked once per process; later calls return the first answer. Thread-safe.
const GpuAdapter& FindGpuAdapter();

}  // namespace edgecv
