#include "runtime/cuda.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "radix/error.h"
#include "radix/platform.h"
#include "runtime/runtime.h"

namespace radix::detail::cuda {
namespace {

constexpr int kAttrComputeMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76;
constexpr int kPoolReleaseThreshold = 4;  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD

}  // namespace

void* openLibrary(const char* env, const std::vector<std::string>& names, std::string& why) {
  const char* path = std::getenv(env);
  for (const std::string& name : path && *path ? std::vector<std::string>{path} : names) {
    if (void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* e = dlerror();
    why += (why.empty() ? "" : "; ") + std::string(e ? e : name);
  }
  return nullptr;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver out;
    std::string why;
    void* lib = openLibrary("RADIX_LIBCUDA", {"libcuda.so.1"}, why);
    const char* env = std::getenv("RADIX_LIBCUDA");
    const std::string path = env && *env ? env : "libcuda.so.1";
    if (!lib) {
      out.problem = "the CUDA driver (" + path + ") cannot be loaded: " + why + "; this machine has no NVIDIA driver";
      return out;
    }
    std::string missing;
    bind(lib, "cuInit", out.init, missing);
    bind(lib, "cuDeviceGetCount", out.deviceGetCount, missing);
    bind(lib, "cuDeviceGet", out.deviceGet, missing);
    bind(lib, "cuDeviceGetName", out.deviceGetName, missing);
    bind(lib, "cuDeviceGetAttribute", out.deviceGetAttribute, missing);
    bind(lib, "cuDevicePrimaryCtxRetain", out.primaryCtxRetain, missing);
    bind(lib, "cuDevicePrimaryCtxRelease_v2", out.primaryCtxRelease, missing);
    bind(lib, "cuCtxSetCurrent", out.ctxSetCurrent, missing);
    bind(lib, "cuMemAlloc_v2", out.memAlloc, missing);
    bind(lib, "cuMemFree_v2", out.memFree, missing);
    bind(lib, "cuMemcpyHtoD_v2", out.memcpyHtoD, missing);
    bind(lib, "cuMemcpyDtoH_v2", out.memcpyDtoH, missing);
    bind(lib, "cuMemcpyDtoD_v2", out.memcpyDtoD, missing);
    bind(lib, "cuMemsetD8Async", out.memsetD8Async, missing);
    bind(lib, "cuMemcpyAsync", out.memcpyAsync, missing);
    bind(lib, "cuStreamCreate", out.streamCreate, missing);
    bind(lib, "cuStreamDestroy_v2", out.streamDestroy, missing);
    bind(lib, "cuStreamSynchronize", out.streamSynchronize, missing);
    bind(lib, "cuModuleLoadData", out.moduleLoadData, missing);
    bind(lib, "cuModuleUnload", out.moduleUnload, missing);
    bind(lib, "cuModuleGetFunction", out.moduleGetFunction, missing);
    bind(lib, "cuLaunchKernel", out.launchKernel, missing);
    bind(lib, "cuGetErrorString", out.getErrorString, missing);
    if (!missing.empty()) {
      out.problem = "the CUDA driver (" + path + ") lacks " + missing + ": it is older than CUDA 11";
      return out;
    }
    std::string optional;
    bind(lib, "cuMemAllocAsync", out.memAllocAsync, optional);
    bind(lib, "cuMemFreeAsync", out.memFreeAsync, optional);
    bind(lib, "cuPointerGetAttribute", out.pointerGetAttribute, optional);
    bind(lib, "cuDeviceGetDefaultMemPool", out.deviceGetDefaultMemPool, optional);
    bind(lib, "cuMemPoolSetAttribute", out.memPoolSetAttribute, optional);
    if (const Result r = out.init(0); r != 0) out.problem = "cuInit failed: " + errorText(r);
    return out;
  }();
  return d;
}

std::string errorText(Result r) {
  const Driver& d = driver();
  const char* text = nullptr;
  if (d.getErrorString && d.getErrorString(r, &text) == 0 && text) return std::string(text) + " (" + std::to_string(r) + ")";
  return "CUDA error " + std::to_string(r);
}

void check(Result r, const char* what) {
  if (r != 0) throw Error(std::string("[cuda] ") + what + ": " + errorText(r));
}

std::string archName(int major, int minor) {
  // The "a" targets (sm_90a, sm_100a) unlock the architecture's own instructions (wgmma, TMA);
  // their code runs only on that architecture, which is the device's.
  const std::string base = "sm_" + std::to_string(major) + std::to_string(minor);
  return (major == 9 || major == 10) && minor == 0 ? base + "a" : base;
}

const DeviceInfo& device(int index) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<DeviceInfo>> devices;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = devices.find(index); it != devices.end()) {
    driver().ctxSetCurrent(it->second->context);
    return *it->second;
  }
  const Driver& d = driver();
  if (!d.problem.empty()) throw Error("[platform] CUDA is not available: " + d.problem);
  int count = 0;
  if (const Result r = d.deviceGetCount(&count); r != 0) throw Error("[platform] CUDA is not available: " + errorText(r));
  if (count == 0) throw Error("[platform] CUDA is not available: the driver sees no device");
  if (index < 0 || index >= count)
    throw Error("[platform] no CUDA device " + std::to_string(index) + ": the driver sees " + std::to_string(count) +
                " (0.." + std::to_string(count - 1) + ")");
  auto info = std::make_unique<DeviceInfo>();
  info->index = index;
  Device dev = 0;
  check(d.deviceGet(&dev, index), "cuDeviceGet");
  char name[256] = {};
  check(d.deviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  info->name = name;
  check(d.deviceGetAttribute(&info->major, kAttrComputeMajor, dev), "cuDeviceGetAttribute");
  check(d.deviceGetAttribute(&info->minor, kAttrComputeMinor, dev), "cuDeviceGetAttribute");
  check(d.primaryCtxRetain(&info->context, dev), "cuDevicePrimaryCtxRetain");
  check(d.ctxSetCurrent(info->context), "cuCtxSetCurrent");
  // Compiled code's temporaries come from the device's pool (cuMemAllocAsync): kept by the pool
  // between calls rather than given back to the driver at each synchronization.
  void* pool = nullptr;
  if (d.deviceGetDefaultMemPool && d.memPoolSetAttribute && d.deviceGetDefaultMemPool(&pool, dev) == 0 && pool) {
    uint64_t keep = UINT64_MAX;
    (void)d.memPoolSetAttribute(pool, kPoolReleaseThreshold, &keep);
  }
  return *devices.emplace(index, std::move(info)).first->second;
}

}  // namespace radix::detail::cuda

namespace radix {

Platform Platform::cuda(int device) {
  const detail::cuda::DeviceInfo& info = detail::cuda::device(device);
  auto s = std::make_shared<detail::PlatformState>(Platform::cpu().state());
  s->target = "cuda:" + detail::cuda::archName(info.major, info.minor);
  s->cudaDevice = device;
  return Platform(std::move(s));
}

Platform Platform::cudaTarget(std::string_view arch) {
  const bool digits = arch.size() > 3 && arch.substr(0, 3) == "sm_";
  size_t end = arch.size();
  if (digits && arch.back() == 'a') --end;
  bool ok = digits && end > 3;
  for (size_t i = 3; ok && i < end; ++i) ok = arch[i] >= '0' && arch[i] <= '9';
  if (!ok) throw Error("[platform] a CUDA target is sm_<digits>[a] (sm_90a, sm_89), got \"" + std::string(arch) + "\"");
  auto s = std::make_shared<detail::PlatformState>(Platform::cpu().state());
  s->target = "cuda:" + std::string(arch);
  return Platform(std::move(s));
}

bool Platform::canRun() const { return state_->target == "cpu" || state_->cudaDevice >= 0; }

}  // namespace radix
