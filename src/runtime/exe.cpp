// Platform and the CPU executable: argument checks, result allocation, donation, the call.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>

#include "compiler/kernels/packed.h"
#include "radix/detail/visit.h"
#include "runtime/mpi.h"
#include "runtime/cuda.h"
#include "runtime/executable.h"
#include "runtime/profiler.h"
#include "runtime/runtime.h"

namespace radix {

Platform Platform::cpu() {
  static const Platform platform(std::make_shared<const detail::PlatformState>());
  return platform;
}

std::string_view Platform::target() const { return state_->target; }
const Sharding& Platform::sharding() const { return state_->sharding; }
const CompileOptions& Platform::options() const { return state_->options; }

Platform Platform::withSharding(Sharding sharding) const {
  if (sharding.numReplicas < 1 || sharding.numPartitions < 1 || sharding.numReplicas > Sharding::kMaxDevices ||
      sharding.numPartitions > Sharding::kMaxDevices)
    throw Error("[platform] numReplicas and numPartitions must be in 1.." + std::to_string(Sharding::kMaxDevices) +
                ", got " + std::to_string(sharding.numReplicas) + " and " + std::to_string(sharding.numPartitions));
  if (sharding.enabled && static_cast<int64_t>(sharding.numPartitions) * sharding.numReplicas > 1) {
    const int64_t devices = static_cast<int64_t>(sharding.numPartitions) * sharding.numReplicas;
    const std::string counts = "numPartitions = " + std::to_string(sharding.numPartitions) + " x numReplicas = " +
                               std::to_string(sharding.numReplicas);
    if (!detail::mpi::launched())
      throw Error("[platform] " + counts + " needs " + std::to_string(devices) +
                  " processes, one per device: run under mpirun -np " + std::to_string(devices) +
                  " (this process was not started by mpirun)");
    detail::mpi::initialize();
    if (detail::mpi::worldSize() != devices)
      throw Error("[platform] " + counts + " = " + std::to_string(devices) + " devices, but mpirun started " +
                  std::to_string(detail::mpi::worldSize()) + " processes: run mpirun -np " + std::to_string(devices));
    detail::mpi::setupGrid(sharding.numReplicas, sharding.numPartitions);
  }
  auto s = std::make_shared<detail::PlatformState>(*state_);
  s->sharding = sharding;
  return Platform(std::move(s));
}

int Platform::processIndex() const {
  if (detail::mpi::launched()) detail::mpi::initialize();
  return detail::mpi::worldRank();
}

int Platform::processCount() const {
  if (detail::mpi::launched()) detail::mpi::initialize();
  return detail::mpi::worldSize();
}

int Platform::partitionIndex() const {
  return detail::shardedAcrossProcesses(*this) ? detail::mpi::partitionIndex(state_->sharding.numPartitions) : 0;
}

Platform Platform::withOptions(CompileOptions options) const {
  if (options.optLevel < 0 || options.optLevel > 3)
    throw Error("[platform] optLevel must be 0..3, got " + std::to_string(options.optLevel));
  if (options.threads < 0 || options.threads > CompileOptions::kMaxThreads)
    throw Error("[platform] threads must be 0 (one per core) or 1.." + std::to_string(CompileOptions::kMaxThreads) +
                ", got " + std::to_string(options.threads));
  if (detail::TargetChecker check = detail::targetChecker().load()) check(options);
  auto s = std::make_shared<detail::PlatformState>(*state_);
  s->options = std::move(options);
  return Platform(std::move(s));
}

namespace detail {

std::atomic<TargetChecker>& targetChecker() {
  static std::atomic<TargetChecker> checker{nullptr};
  return checker;
}

void setTargetChecker(TargetChecker checker) { targetChecker().store(checker); }

void checkCallStructure(const Signature& signature, const std::type_info& argTypes, uint64_t constantsHash) {
  if (*signature.argTypes != argTypes)
    throw Error("[exe] argument structure differs from compile time: compiled for " + demangle(*signature.argTypes) +
                ", called with " + demangle(argTypes));
  if (signature.constantsHash != constantsHash)
    throw Error("[exe] non-Tensor arguments (compile-time constants) or container sizes differ from compile time: "
                "compile again for new values");
}

namespace {

// Pins the storages of the arguments that a call does not donate for the packed-weight cache
// (compiler/kernels/packed.h), and unpins them when the call returns or throws.
class PinnedArguments {
 public:
  static constexpr size_t kMinPinnedBytes = 4096;
  PinnedArguments(const std::vector<DeviceBuffer*>& args, const std::vector<int32_t>& donations) {
    std::vector<bool> donated(args.size(), false);
    for (int32_t a : donations)
      if (a >= 0) donated[static_cast<size_t>(a)] = true;
    for (size_t a = 0; a < args.size(); ++a) {
      Storage* s = args[a] ? args[a]->storage.get() : nullptr;
      // Small buffers (ids, positions, biases) are cheap to pack per call: not worth a pin. Device
      // buffers are not packed by the CPU's kernels.
      if (donated[a] || !s || !s->data || s->bytes < kMinPinnedBytes || s->cudaDevice >= 0 ||
          std::find(pinned_.begin(), pinned_.end(), s) != pinned_.end())
        continue;
      s->pinned.store(true);
      kernels::pinBuffer(s->data, s->bytes, s->generation.load(), s->weight.load());
      pinned_.push_back(s);
    }
  }
  ~PinnedArguments() {
    for (Storage* s : pinned_) kernels::unpinBuffer(s->data);
  }
  PinnedArguments(const PinnedArguments&) = delete;
  PinnedArguments& operator=(const PinnedArguments&) = delete;

 private:
  std::vector<Storage*> pinned_;
};

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(std::string mlir, Signature signature, CompiledCode code)
      : mlir_(std::move(mlir)), signature_(std::move(signature)), code_(std::move(code)) {}

  const std::string& mlir() const override { return mlir_; }
  const Signature& signature() const override { return signature_; }
  bool fromCache() const override { return code_.fromCache; }
  const std::string& cacheEntry() const override { return code_.entryDir; }

  std::vector<Tensor> run(const std::vector<const Tensor*>& leaves,
                          const std::function<std::string(size_t)>& leafPath) const override {
    TraceEvent event("exe.call");
    if (!code_.cannotRun.empty()) throw Error(code_.cannotRun);
    const Signature& sig = signature_;
    if (leaves.size() != sig.leafToArg.size())
      throw Error("[exe] " + std::to_string(leaves.size()) + " tensor arguments, compiled for " +
                  std::to_string(sig.leafToArg.size()));
    const size_t numArgs = sig.argShapes.size();
    const int device = code_.cudaDevice;
    std::vector<DeviceBuffer*> args(numArgs, nullptr);
    std::vector<size_t> firstLeaf(numArgs, 0);
    int64_t argBytes = 0;
    for (size_t i = 0; i < leaves.size(); ++i) {
      const Tensor& t = *leaves[i];
      const int32_t a = sig.leafToArg[i];
      const auto& buffer = TensorAccess::buffer(t);
      if (!buffer)
        throw Error("[exe] " + leafPath(i) + " " + t.shape().str() + " is not bound to a buffer");
      if (buffer->donated || !buffer->storage)
        throw Error("[exe] " + leafPath(i) + " " + t.shape().str() +
                    " was donated to a result of an earlier call (reuseBuffer): its buffer now belongs to that result");
      if (!t.shape().sameDimsAndDtype(sig.argShapes[a]))
        throw Error("[exe] " + leafPath(i) + " is " + t.shape().str() + ", compiled for " + sig.argShapes[a].str());
      if (const int want = partitionsOf(sig.argShapes[a]); buffer->partitions != want)
        throw Error("[exe] " + leafPath(i) + " " + t.shape().str() +
                    (want > 1 ? " holds the whole array, but the executable takes this process's shard of " +
                                    sig.argShapes[a].str() + ": create it on the sharded platform (fromValues, fromShard)"
                              : " holds one shard of " + std::to_string(buffer->partitions) +
                                    ", but the executable takes the whole array " + sig.argShapes[a].str()));
      if (buffer->storage->cudaDevice != device)
        throw Error("[exe] " + leafPath(i) + " " + t.shape().str() +
                    (device >= 0 ? " is in host memory: the executable runs on CUDA device " + std::to_string(device) +
                                       "; create the tensor on Platform::cuda()"
                     : buffer->storage->cudaDevice >= 0
                         ? " is in CUDA device memory: the executable runs on the CPU; toVector() copies it back"
                         : " is on another CUDA device"));
      if (args[a] && args[a] != buffer.get())
        throw Error("[exe] " + leafPath(i) + " " + t.shape().str() + " was the same buffer as another argument at compile time (" +
                    leafPath(firstLeaf[a]) + ") but differs now");
      if (!args[a]) {
        argBytes += static_cast<int64_t>(t.shape().byteSize());
        firstLeaf[a] = i;
      }
      args[a] = buffer.get();
    }
    // External memory (Tensor::fromExternal, e.g. mmapped weights) is never written: a donated one
    // is copied into owned storage first, which the result then takes.
    for (int32_t a : sig.donations)
      if (a >= 0 && args[a]->storage->isExternal()) {
        auto copy = std::make_shared<Storage>(args[a]->storage->bytes);
        if (copy->bytes) std::memcpy(copy->data, args[a]->storage->data, copy->bytes);
        args[a]->storage = std::move(copy);
      }
    std::vector<std::shared_ptr<Storage>> outputs;
    for (size_t r = 0; r < sig.resultShapes.size(); ++r) {
      const int32_t a = sig.donations[r];
      outputs.push_back(a >= 0 ? args[a]->storage : std::make_shared<Storage>(localBytes(sig.resultShapes[r]), device));
    }
    const std::vector<int32_t>& alias = code_.resultAlias;
    std::vector<void*> pointers;
    for (size_t a = 0; a < numArgs; ++a) pointers.push_back(args[a]->storage->data);
    for (size_t r = 0; r < outputs.size(); ++r)
      if (alias[r] == -1) pointers.push_back(outputs[r]->data);
    std::vector<void*> packed(pointers.size());
    for (size_t i = 0; i < pointers.size(); ++i) packed[i] = &pointers[i];
    event.arg("argument_bytes", argBytes);
    {
      // Arguments the call only reads are pinned: the GEMMs may reuse B packed by earlier calls.
      PinnedArguments pins(args, sig.donations);
      ProfileScope profile(code_.profile.get());
      if (device >= 0) {
        (void)cuda::device(device);  // its context current on this thread
        cuda::beginCall(device);
      }
      code_.entry(packed.data());
      if (device >= 0) {
        cuda::endCall();
        if (const std::string failure = cuda::takeError(); !failure.empty()) throw Error("[exe] CUDA: " + failure);
      }
    }
    for (size_t r = 0; r < outputs.size(); ++r)
      if (alias[r] >= 0) copyStorage(*outputs[r], *outputs[alias[r]], localBytes(sig.resultShapes[r]));
    // On a GPU, results of a host memory kind come back in host memory (one copy each).
    if (device >= 0)
      for (size_t r = 0; r < outputs.size(); ++r)
        if (sig.memories[r] != Memory::device && sig.donations[r] < 0) outputs[r] = onHost(outputs[r]);
    std::vector<Tensor> results;
    for (size_t r = 0; r < outputs.size(); ++r) {
      auto buffer = std::make_shared<DeviceBuffer>();
      buffer->storage = outputs[r];
      buffer->memory = sig.memories[r];
      buffer->partitions = partitionsOf(sig.resultShapes[r]);
      results.push_back(TensorAccess::bound(sig.resultShapes[r], std::move(buffer), sig.memories[r]));
    }
    for (int32_t a : sig.donations)
      if (a >= 0) {
        args[a]->storage->renewGeneration();  // written in place: earlier packed copies are stale
        args[a]->storage.reset();
        args[a]->donated = true;
      }
    return results;
  }

 private:
  int partitionsOf(const Shape& shape) const {
    return signature_.partitions > 1 && shape.shardingMask() != 0 ? signature_.partitions : 1;
  }
  size_t localBytes(const Shape& shape) const { return localShape(shape, partitionsOf(shape), "exe").byteSize(); }

  std::string mlir_;
  Signature signature_;
  CompiledCode code_;
};

}  // namespace

void placeOn(CompiledCode& code, const Platform& platform, std::string_view target, const std::string& name) {
  code.cudaDevice = platform.state().cudaDevice;
  if (target == "cpu" || code.cudaDevice >= 0) return;
  code.cannotRun = "[exe] " + name + " is compiled for " + std::string(target) +
                   " without a device (Platform::cudaTarget compiles only): load it with radix::Program on "
                   "Platform::cuda() where the GPU is (docs/gpu.md)" +
                   (code.entryDir.empty() ? std::string() : "; its cache entry is " + code.entryDir);
}

std::shared_ptr<Executable> makeCpuExecutable(std::string mlir, Signature signature, CompiledCode code) {
  return std::make_shared<CpuExecutable>(std::move(mlir), std::move(signature), std::move(code));
}

}  // namespace detail
}  // namespace radix
