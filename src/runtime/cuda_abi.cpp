// The mgpu* functions that MLIR's gpu-to-llvm lowering calls from compiled host code (the ABI
// of MLIR's CudaRuntimeWrappers), over the driver loaded at run time (runtime/cuda.h). Kernel
// modules load lazily, at their first launch: an object's constructors register its cubins on
// any machine (the compiler's JIT runs them on CPU-only hosts too), and only a launch needs a
// device. Compiled code cannot take a C++ exception, so a failure is kept per thread for the
// runtime to raise after the entry returns (takeError), and later calls of that entry do nothing.
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>

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

// The running call of this thread (beginCall .. endCall): its stream (one per thread and
// device, made once), whether a copy into host memory awaits a synchronization, and the
// stream-ordered allocations it made (freed in stream order too).
struct Call {
  Stream stream = nullptr;
  bool hostCopyPending = false;
  std::unordered_set<void*> pooled;
};
thread_local Call call;
thread_local std::map<int, Stream> streams;

// True when `p` is not device memory (a host buffer of the host code: a staged scalar).
bool isHostPointer(void* p) {
  const Driver& d = driver();
  int type = 0;
  if (!d.pointerGetAttribute || d.pointerGetAttribute(&type, 2 /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */,
                                                      reinterpret_cast<DevicePtr>(p)) != 0)
    return true;  // pageable host memory is unknown to the driver
  return type != 2;  // CU_MEMORYTYPE_DEVICE
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

void beginCall(int device) {
  call.hostCopyPending = false;
  Stream& s = streams[device];
  if (!s && driver().problem.empty()) failed(driver().streamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
  call.stream = s;
}

void endCall() {
  // What compiled code did not free (none, unless it stopped at a failure) goes back in order.
  for (void* p : call.pooled) driver().memFreeAsync(reinterpret_cast<DevicePtr>(p), call.stream);
  if (call.stream) failed(driver().streamSynchronize(call.stream), "cuStreamSynchronize");
  call = Call{};
}

Stream callStream() { return call.stream; }

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

// Within a call, every "new stream" of the host code is the call's stream: the operations keep
// their order on it, and the host waits only where it reads what the device wrote.
void* mgpuStreamCreate() {
  if (noDriver("creating a stream")) return nullptr;
  if (call.stream) return call.stream;
  Stream s = nullptr;
  failed(driver().streamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
  return s;
}

void mgpuStreamDestroy(void* stream) {
  if (stream && stream != call.stream && driver().problem.empty()) driver().streamDestroy(stream);
}

void mgpuStreamSynchronize(void* stream) {
  if (!driver().problem.empty()) return;
  if (stream && stream == call.stream) {
    if (!call.hostCopyPending) return;
    call.hostCopyPending = false;
  }
  failed(driver().streamSynchronize(stream), "cuStreamSynchronize");
}

void* mgpuMemAlloc(uint64_t bytes, void* stream, bool /*isHostShared*/) {
  if (noDriver("allocating device memory")) return nullptr;
  DevicePtr p = 0;
  if (bytes == 0) return nullptr;
  if (stream && stream == call.stream && driver().memAllocAsync) {
    if (!failed(driver().memAllocAsync(&p, bytes, stream), "cuMemAllocAsync")) call.pooled.insert(reinterpret_cast<void*>(p));
    return reinterpret_cast<void*>(p);
  }
  failed(driver().memAlloc(&p, bytes), "cuMemAlloc");
  return reinterpret_cast<void*>(p);
}

void mgpuMemFree(void* p, void* stream) {
  if (!p || !driver().problem.empty()) return;
  if (call.pooled.erase(p)) {
    failed(driver().memFreeAsync(reinterpret_cast<DevicePtr>(p), stream ? stream : call.stream), "cuMemFreeAsync");
    return;
  }
  // Memory of the synchronous allocator may still be in use by queued work.
  if (call.stream) failed(driver().streamSynchronize(call.stream), "cuStreamSynchronize");
  driver().memFree(reinterpret_cast<DevicePtr>(p));
}

void mgpuMemcpy(void* dst, void* src, size_t bytes, void* stream) {
  if (!lastError.empty() || noDriver("copying device memory")) return;
  failed(driver().memcpyAsync(reinterpret_cast<DevicePtr>(dst), reinterpret_cast<DevicePtr>(src), bytes, stream),
         "cuMemcpyAsync");
  if (stream && stream == call.stream && isHostPointer(dst)) call.hostCopyPending = true;
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
