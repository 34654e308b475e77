// A stand-in for libcuda.so.1 on machines without a GPU (RADIX_LIBCUDA=<this library>): the
// driver entry points Radix loads, over host memory. Device memory is calloc'ed (zeros), copies are
// memcpy, modules must be CUDA ELF images, and launches are counted, not run (kernel results are
// whatever the output buffers held). It lets the tests drive the runtime's device buffers and the
// host side of compiled GPU code: allocations, copies, module loads, launches, failures.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {
std::mutex mutex;
std::map<uint64_t, size_t> live;  // device allocations: address, bytes

// Inside one of the fake's allocations (the caller holds the mutex).
bool isDevice(uint64_t p) {
  auto it = live.upper_bound(p);
  return it != live.begin() && p < std::prev(it)->first + std::prev(it)->second;
}
int launches = 0, modules = 0, failLaunches = 0, syncs = 0;
uint64_t bytesToHost = 0;
constexpr int kSuccess = 0, kInvalidValue = 1, kLaunchFailed = 719, kInvalidImage = 200;
}  // namespace

extern "C" {

// Test hooks (dlsym'ed by tests/fake_cuda_test.cpp).
void radixFakeCudaStats(int* outLaunches, int* outLiveAllocations, int* outModules) {
  std::lock_guard<std::mutex> lock(mutex);
  *outLaunches = launches;
  *outLiveAllocations = static_cast<int>(live.size());
  *outModules = modules;
}
void radixFakeCudaFailLaunches(int fail) { failLaunches = fail; }
// Stream synchronizations so far (the host waiting for the device).
int radixFakeCudaSyncs() {
  std::lock_guard<std::mutex> lock(mutex);
  return syncs;
}

// Bytes copied from device memory into host memory so far.
uint64_t radixFakeCudaBytesToHost() {
  std::lock_guard<std::mutex> lock(mutex);
  return bytesToHost;
}

int cuInit(unsigned) { return kSuccess; }
int cuDeviceGetCount(int* n) {
  *n = 1;
  return kSuccess;
}
int cuDeviceGet(int* d, int i) {
  if (i != 0) return kInvalidValue;
  *d = 0;
  return kSuccess;
}
int cuDeviceGetName(char* name, int n, int) {
  std::strncpy(name, "Radix fake GPU", static_cast<size_t>(n));
  return kSuccess;
}
int cuDeviceGetAttribute(int* v, int attribute, int) {
  *v = attribute == 75 ? 9 : attribute == 76 ? 0 : 0;  // compute capability 9.0
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void** ctx, int) {
  static int context;
  *ctx = &context;
  return kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
int cuCtxSetCurrent(void*) { return kSuccess; }
int cuMemAlloc_v2(uint64_t* p, size_t bytes) {
  void* m = std::calloc(bytes ? bytes : 1, 1);  // zeros: what kernels that never run leave
  if (!m) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  std::lock_guard<std::mutex> lock(mutex);
  live[reinterpret_cast<uint64_t>(m)] = bytes;
  *p = reinterpret_cast<uint64_t>(m);
  return kSuccess;
}
int cuMemFree_v2(uint64_t p) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!live.erase(p)) return kInvalidValue;
  std::free(reinterpret_cast<void*>(p));
  return kSuccess;
}
int cuMemcpyHtoD_v2(uint64_t d, const void* h, size_t n) {
  std::memcpy(reinterpret_cast<void*>(d), h, n);
  return kSuccess;
}
int cuMemcpyDtoH_v2(void* h, uint64_t d, size_t n) {
  std::memcpy(h, reinterpret_cast<const void*>(d), n);
  std::lock_guard<std::mutex> lock(mutex);
  bytesToHost += n;
  return kSuccess;
}
int cuMemcpyDtoD_v2(uint64_t to, uint64_t from, size_t n) {
  std::memmove(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), n);
  return kSuccess;
}
int cuMemsetD8Async(uint64_t d, unsigned char v, size_t n, void*) {
  std::memset(reinterpret_cast<void*>(d), v, n);
  return kSuccess;
}
int cuMemcpyAsync(uint64_t to, uint64_t from, size_t n, void*) {
  std::memmove(reinterpret_cast<void*>(to), reinterpret_cast<const void*>(from), n);
  std::lock_guard<std::mutex> lock(mutex);
  if (!isDevice(to)) bytesToHost += n;
  return kSuccess;
}
int cuStreamCreate(void** s, unsigned) {
  static int stream;
  *s = &stream;
  return kSuccess;
}
int cuStreamDestroy_v2(void*) { return kSuccess; }
int cuStreamSynchronize(void*) {
  std::lock_guard<std::mutex> lock(mutex);
  ++syncs;
  return kSuccess;
}
// Stream-ordered allocation: in order on the host here, as the device would run it.
int cuMemAllocAsync(uint64_t* p, size_t bytes, void*) { return cuMemAlloc_v2(p, bytes); }
int cuMemFreeAsync(uint64_t p, void*) { return cuMemFree_v2(p); }
int cuDeviceGetDefaultMemPool(void** pool, int) {
  static int p;
  *pool = &p;
  return kSuccess;
}
int cuMemPoolSetAttribute(void*, int, void*) { return kSuccess; }
// CU_POINTER_ATTRIBUTE_MEMORY_TYPE: device for the fake's allocations, else unknown (pageable).
int cuPointerGetAttribute(void* data, int attribute, uint64_t p) {
  if (attribute != 2) return kInvalidValue;
  std::lock_guard<std::mutex> lock(mutex);
  if (!isDevice(p)) return kInvalidValue;
  *static_cast<unsigned*>(data) = 2;
  return kSuccess;
}
int cuModuleLoadData(void** m, const void* image) {
  const auto* b = static_cast<const unsigned char*>(image);
  uint16_t machine = 0;
  std::memcpy(&machine, b + 18, 2);
  if (std::memcmp(b, "\x7f" "ELF", 4) != 0 || machine != 190) return kInvalidImage;  // a cubin: EM_CUDA
  std::lock_guard<std::mutex> lock(mutex);
  ++modules;
  *m = const_cast<void*>(image);
  return kSuccess;
}
int cuModuleUnload(void*) { return kSuccess; }
int cuModuleGetFunction(void** f, void* m, const char* name) {
  *f = m && name ? const_cast<char*>(name) : nullptr;
  return *f ? kSuccess : 500;  // CUDA_ERROR_NOT_FOUND
}
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned, void*,
                   void** params, void**) {
  if (!f || !params || gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024)
    return kInvalidValue;
  if (failLaunches) return kLaunchFailed;
  std::lock_guard<std::mutex> lock(mutex);
  ++launches;
  return kSuccess;
}
int cuGetErrorString(int r, const char** s) {
  *s = r == kLaunchFailed ? "CUDA_ERROR_LAUNCH_FAILED" : r == kInvalidImage ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR";
  return kSuccess;
}

}  // extern "C"
