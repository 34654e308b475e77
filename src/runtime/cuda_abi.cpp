// The mgpu* functions that MLIR's gpu-to-llvm lowering calls from compiled host code (the ABI
// of MLIR's CudaRuntimeWrappers), over the driver loaded at run time (runtime/cuda.h). Kernel
// modules load lazily, at their first launch: an object's constructors register its cubins on
// any machine (the compiler's JIT runs them on CPU-only hosts too), and only a launch needs a
// device. Compiled code cannot take a C++ exception, so a failure is kept per thread for the
// runtime to raise after the entry returns (takeError), and later calls of that entry do nothing.
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "runtime/cuda.h"

namespace radix::detail::cuda {
namespace {

thread_local std::string lastError;

bool failed(Result r, const char* what) {
  if (r == 0) return false;
  if (lastError.empty()) lastError = std::string(what) + ": " + errorText(r);
  return true;
}

bool noDriver(const char* what) {
  const Driver& d = driver();
  if (d.problem.empty()) return false;
  if (lastError.empty()) lastError = std::string(what) + ": " + d.problem;
  return true;
}

// A kernel module as compiled code sees it: the cubin's bytes until the first launch.
struct LazyModule {
  const void* data;
  size_t bytes;
  std::once_flag once;
  Module module = nullptr;
};

}  // namespace

/// The first CUDA failure of compiled code on this thread since the last call ("" if none).
std::string takeError() {
  std::string e = std::move(lastError);
  lastError.clear();
  return e;
}

void recordError(const std::string& what) {
  if (lastError.empty()) lastError = what;
}

bool hasError() { return !lastError.empty(); }

}  // namespace radix::detail::cuda

using namespace radix::detail::cuda;

extern "C" {

void* mgpuModuleLoad(void* data, size_t bytes) { return new LazyModule{data, bytes, {}, nullptr}; }

void mgpuModuleUnload(void* m) {
  auto* lazy = static_cast<LazyModule*>(m);
  if (!lazy) return;
  if (lazy->module && driver().problem.empty()) driver().moduleUnload(lazy->module);
  delete lazy;
}

void* mgpuModuleGetFunction(void* m, const char* name) {
  auto* lazy = static_cast<LazyModule*>(m);
  if (!lastError.empty() || noDriver("loading a kernel")) return nullptr;
  if (!lazy) {
    lastError = std::string("kernel ") + (name ? name : "?") + ": its module was never registered (the object's constructors did not run)";
    return nullptr;
  }
  std::call_once(lazy->once, [&] { failed(driver().moduleLoadData(&lazy->module, lazy->data), "cuModuleLoadData"); });
  if (!lazy->module) return nullptr;
  Function f = nullptr;
  if (failed(driver().moduleGetFunction(&f, lazy->module, name), "cuModuleGetFunction")) return nullptr;
  return f;
}

void mgpuLaunchKernel(void* function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                      int32_t sharedBytes, void* stream, void** params, void** extra, size_t /*paramsCount*/) {
  if (!lastError.empty()) return;
  if (!function) {
    lastError = "a kernel launch without a kernel";
    return;
  }
  failed(driver().launchKernel(function, unsigned(gx), unsigned(gy), unsigned(gz), unsigned(bx), unsigned(by),
                               unsigned(bz), unsigned(sharedBytes), stream, params, extra),
         "cuLaunchKernel");
}

void* mgpuStreamCreate() {
  if (noDriver("creating a stream")) return nullptr;
  Stream s = nullptr;
  failed(driver().streamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
  return s;
}

void mgpuStreamDestroy(void* stream) {
  if (stream && driver().problem.empty()) driver().streamDestroy(stream);
}

void mgpuStreamSynchronize(void* stream) {
  if (!driver().problem.empty()) return;
  failed(driver().streamSynchronize(stream), "cuStreamSynchronize");
}

void* mgpuMemAlloc(uint64_t bytes, void* /*stream*/, bool /*isHostShared*/) {
  if (noDriver("allocating device memory")) return nullptr;
  DevicePtr p = 0;
  if (bytes == 0) return nullptr;
  failed(driver().memAlloc(&p, bytes), "cuMemAlloc");
  return reinterpret_cast<void*>(p);
}

void mgpuMemFree(void* p, void* /*stream*/) {
  if (p && driver().problem.empty()) driver().memFree(reinterpret_cast<DevicePtr>(p));
}

void mgpuMemcpy(void* dst, void* src, size_t bytes, void* stream) {
  if (!lastError.empty() || noDriver("copying device memory")) return;
  failed(driver().memcpyAsync(reinterpret_cast<DevicePtr>(dst), reinterpret_cast<DevicePtr>(src), bytes, stream),
         "cuMemcpyAsync");
}

void mgpuMemset32(void* dst, unsigned value, size_t count, void* stream) {
  if (!lastError.empty() || noDriver("filling device memory")) return;
  if (value == 0) {
    failed(driver().memsetD8Async(reinterpret_cast<DevicePtr>(dst), 0, count * 4, stream), "cuMemsetD8Async");
    return;
  }
  if (lastError.empty()) lastError = "mgpuMemset32 of a non-zero value is not supported";
}

void mgpuSetDefaultDevice(int32_t device) {
  try {
    (void)radix::detail::cuda::device(device);
  } catch (const std::exception& e) {
    if (lastError.empty()) lastError = e.what();
  }
}

}  // extern "C"
