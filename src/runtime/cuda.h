#pragma once
// The CUDA driver API, loaded at run time (dlopen("libcuda.so.1")): nothing links against a GPU
// library at build time. No CUDA headers: the few types and entry points are declared here.
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace radix::detail::cuda {

using Result = int;  // CUresult; 0 is CUDA_SUCCESS
using Device = int;
using Context = void*;
using Module = void*;
using Function = void*;
using Stream = void*;
using DevicePtr = uint64_t;

/// The driver's entry points; `problem` says why it could not be loaded ("" when loaded).
struct Driver {
  std::string problem;
  Result (*init)(unsigned) = nullptr;
  Result (*deviceGetCount)(int*) = nullptr;
  Result (*deviceGet)(Device*, int) = nullptr;
  Result (*deviceGetName)(char*, int, Device) = nullptr;
  Result (*deviceGetAttribute)(int*, int, Device) = nullptr;
  Result (*primaryCtxRetain)(Context*, Device) = nullptr;
  Result (*primaryCtxRelease)(Device) = nullptr;
  Result (*ctxSetCurrent)(Context) = nullptr;
  Result (*memAlloc)(DevicePtr*, size_t) = nullptr;
  Result (*memFree)(DevicePtr) = nullptr;
  Result (*memcpyHtoD)(DevicePtr, const void*, size_t) = nullptr;
  Result (*memcpyDtoH)(void*, DevicePtr, size_t) = nullptr;
  Result (*memcpyDtoD)(DevicePtr, DevicePtr, size_t) = nullptr;
  Result (*memsetD8Async)(DevicePtr, unsigned char, size_t, Stream) = nullptr;
  Result (*memcpyAsync)(DevicePtr, DevicePtr, size_t, Stream) = nullptr;
  Result (*streamCreate)(Stream*, unsigned) = nullptr;
  Result (*streamDestroy)(Stream) = nullptr;
  Result (*streamSynchronize)(Stream) = nullptr;
  Result (*moduleLoadData)(Module*, const void*) = nullptr;
  Result (*moduleUnload)(Module) = nullptr;
  Result (*moduleGetFunction)(Function*, Module, const char*) = nullptr;
  Result (*launchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Stream, void**,
                         void**) = nullptr;
  Result (*getErrorString)(Result, const char**) = nullptr;
  // Optional (null on drivers without them): stream-ordered allocation (CUDA 11.2) and the
  // pointer query that tells host memory from device memory.
  Result (*memAllocAsync)(DevicePtr*, size_t, Stream) = nullptr;
  Result (*memFreeAsync)(DevicePtr, Stream) = nullptr;
  Result (*pointerGetAttribute)(void*, int, DevicePtr) = nullptr;
  Result (*deviceGetDefaultMemPool)(void**, Device) = nullptr;
  Result (*memPoolSetAttribute)(void*, int, void*) = nullptr;
};

/// Binds `fn` to the symbol `name` of a dlopen'ed library, or appends the name to `missing`.
/// bind(lib, "cuInit", d.init, missing) -> true
template <class F>
bool bind(void* lib, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

/// dlopen of $`env` when set, else of each of `names` in turn: the handle, or null with the
/// loader's reasons in `why`. openLibrary("RADIX_LIBCUDNN", {"libcudnn.so.9"}, why)
void* openLibrary(const char* env, const std::vector<std::string>& names, std::string& why);

/// This thread's T (a library's handle and its state), made on first use and never destroyed:
/// at a thread's or the process's exit the library may be gone. The list keeps them reachable.
/// perThread<LtState>().handle
template <class T>
T& perThread() {
  static std::mutex mutex;
  static auto* all = new std::vector<T*>;
  static thread_local T* mine = [] {
    auto* t = new T;
    std::lock_guard<std::mutex> lock(mutex);
    all->push_back(t);
    return t;
  }();
  return *mine;
}

/// Loads the driver once per process (the library path from RADIX_LIBCUDA, else libcuda.so.1).
const Driver& driver();
/// "CUDA_ERROR_NO_DEVICE ..." for a result, through the driver when it has it.
std::string errorText(Result r);
/// Throws radix::Error("[cuda] what: ...") unless r is CUDA_SUCCESS.
void check(Result r, const char* what);

/// The device's name and compute capability, with its primary context current on this thread.
struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;
  Context context = nullptr;
};
/// Device `index`, initialized once; throws radix::Error("[platform] ...") when there is no
/// driver, no device, or no such device.
const DeviceInfo& device(int index);
/// The PTX/SASS architecture name of a compute capability: 9.0 -> "sm_90a" (the arch-specific
/// Hopper features), 8.9 -> "sm_89".
std::string archName(int major, int minor);

/// The first CUDA failure of compiled code on this thread (its mgpu* calls, runtime/cuda_abi.cpp)
/// since the last call, and clears it; "" when none.
std::string takeError();
/// Compiled code's call on `device` (runtime/cuda_abi.cpp): between beginCall and endCall, its
/// operations go in order to one stream of this thread's, with stream-ordered allocations, and
/// the host waits for the stream only where it reads device memory (a copy into host memory)
/// and in endCall, which also raises nothing: failures are kept for takeError.
/// beginCall(0); entry(args); endCall(); takeError()
void beginCall(int device);
void endCall();
/// The stream of the running call on this thread; null outside a call.
Stream callStream();
/// Keeps `what` as this thread's CUDA failure unless one is kept already (compiled code cannot
/// throw; the runtime raises it after the call). recordError("cublasLtMatmul: ...")
void recordError(const std::string& what);
/// True when this thread has a CUDA failure not yet taken: compiled code's later calls do nothing.
bool hasError();

}  // namespace radix::detail::cuda
