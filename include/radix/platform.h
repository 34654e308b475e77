#pragma once
/// Platforms (where code runs), compile options and memory kinds.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radix {

/// Where a buffer lives. On CPU every kind is host memory; the kind is still recorded in the
/// module (`mhlo.memory_kind`) and reported by Tensor::memory(), as on an accelerator.
enum class Memory : uint8_t { device, hostPinned, hostUnpinned };

/// PJRT's name of a memory kind: memoryKindName(Memory::hostPinned) -> "pinned_host"
std::string_view memoryKindName(Memory memory);

/// How a program is partitioned across devices (the seed's Platform.sharding()). Each count is
/// 1..kMaxDevices; a sharded axis must be divisible by numPartitions. With enabled and
/// numPartitions x numReplicas > 1, each device is one MPI process (docs/sharding.md): run under
/// `mpirun -np numPartitions*numReplicas`. The grid is row-major (replica, partition): the
/// program is partitioned over the numPartitions processes of each replica.
struct Sharding {
  static constexpr int kMaxDevices = 1 << 16;
  int numReplicas = 1;
  int numPartitions = 1;
  /// With partitions > 1, emit `mhlo.sharding` / `mhlo.layout_mode` on arguments and results.
  bool enabled = true;
};

/// Options that change how a module is compiled; all of them enter the cache key.
struct CompileOptions {
  /// LLVM optimization level, 0..3.
  int optLevel = 2;
  /// On-disk executable cache: nullopt follows RADIX_CACHE_DIR ("off" disables it).
  std::optional<bool> cache;
  /// Cache folder; empty means $RADIX_CACHE_DIR, else $XDG_CACHE_HOME/radix, else ~/.cache/radix.
  std::string cacheDir;
  /// Writes module.mlir (with locations) here; empty means $RADIX_DUMP_DIR (or nothing).
  std::string dumpDir;
  /// Also writes the IR after each pass of the lowering pipeline into dumpDir.
  bool dumpPasses = false;
  /// When dumping passes, only those whose name matches this ECMAScript regex (empty: all).
  std::string dumpPassRegex;
  /// Overrides the host CPU name (e.g. "x86-64-v3") and features ("+avx2,+fma"), so that a
  /// cache can be shared by machines of one kind.
  std::string targetCpu;
  std::string targetFeatures;
  /// Threads for compiled code: 1 runs serial loops; 0 (default) lets OpenMP use one per core
  /// (or $OMP_NUM_THREADS); N > 1 splits each op's outer parallel loops over N threads (at most
  /// kMaxThreads; negative counts are an error).
  int threads = 0;
  static constexpr int kMaxThreads = 1024;
  /// MLIR passes run on the tensor-level IR after inlining, before bufferization, in
  /// mlir-opt's syntax without builtin.module(...): "func.func(linalg-generalize-named-ops)".
  std::string extraPasses;
  /// Per-op profile (docs/profiling.md): compiled code times each kernel call, loop nest and copy
  /// for radix::profileReport. nullopt follows RADIX_PROFILE (on unless unset, "" or "0"). With
  /// profiling off the compiled code is exactly that of a build without the profiler.
  std::optional<bool> profile;
};

namespace detail {
struct PlatformState;
}

/// A compilation and execution target. Cheap to copy.
/// Platform cpu = Platform::cpu(); cpu.target() -> "cpu"
class Platform {
 public:
  /// The host CPU (initialises LLVM's native target once per process).
  static Platform cpu();

  /// The NVIDIA GPU `device`, through the CUDA driver loaded at run time (libcuda.so.1: nothing
  /// links against a GPU library). Throws radix::Error("[platform] CUDA is not available: ...")
  /// on a machine without the driver or a device. Platform::cuda().target() -> "cuda:sm_90a"
  static Platform cuda(int device = 0);
  /// A CUDA compile target without a device, to compile ahead of time on any machine (docs/gpu.md);
  /// its executables are written to the cache, not run. Throws radix::Error("[platform] ...") for a
  /// name that is not sm_<digits>[a]. Platform::cudaTarget("sm_90a").target() -> "cuda:sm_90a"
  static Platform cudaTarget(std::string_view arch);

  /// "cpu", "cuda:sm_90a"
  std::string_view target() const;
  /// True for a platform whose executables can run here (the CPU, a CUDA device), false for a
  /// compile-only target (Platform::cudaTarget).
  bool canRun() const;
  /// The sharding configuration: numReplicas, numPartitions, enabled.
  const Sharding& sharding() const;
  /// A copy with another sharding: cpu.withSharding({.numPartitions = 4}) under mpirun -np 4.
  /// With enabled and more than one device it initializes MPI (once per process; finalized at
  /// exit) and throws radix::Error("[platform] ...") when not run under mpirun, or when the world
  /// size differs from numPartitions x numReplicas.
  Platform withSharding(Sharding sharding) const;
  /// This process's rank among the processes of the job (0 without mpirun): cpu.processIndex() -> 1
  int processIndex() const;
  /// The number of processes of the job (1 without mpirun): cpu.processCount() -> 2
  int processCount() const;
  /// This process's partition index, rank % numPartitions: 0 on an unsharded platform.
  int partitionIndex() const;
  /// The compile options used by radix::compile on this platform.
  const CompileOptions& options() const;
  /// A copy with other compile options: cpu.withOptions({.optLevel = 0}). Throws
  /// radix::Error("[platform] ..." / "[compile] ...") for an out-of-range level or thread count, or
  /// an unknown target CPU or feature.
  Platform withOptions(CompileOptions options) const;

  friend bool operator==(const Platform& a, const Platform& b) { return a.state_ == b.state_; }
  const detail::PlatformState& state() const { return *state_; }

 private:
  explicit Platform(std::shared_ptr<const detail::PlatformState> state) : state_(std::move(state)) {}
  std::shared_ptr<const detail::PlatformState> state_;
};

}  // namespace radix

namespace radix {
/// CPU names that CompileOptions::targetCpu accepts on this host's architecture: {"x86-64", "x86-64-v3", "znver4", ...}
std::vector<std::string> targetCpuNames();
/// Feature names that CompileOptions::targetFeatures accepts (with + or -): {"avx2", "fma", ...}
std::vector<std::string> targetFeatureNames();
/// The host CPU as LLVM names it: "znver4"
std::string hostTargetCpu();
/// The host's vector and matrix features that choose Radix's kernels (AVX2/FMA/F16C, AVX-VNNI,
/// AVX-512 F/BW/VL/DQ/VNNI/BF16/FP16, AMX tile/bf16/int8/fp16), those it has: {"avx2", "fma", ...}
std::vector<std::string> hostVectorFeatures();

class Shape;
/// The seed's writeShardingRepresentation: "{replicated}" when no axis is sharded or there is one
/// partition, else "{devices=[d0,d1,...]<=[n]}" with n for sharded axes and 1 for the others.
/// shardingRepresentation(Shape({16, 8}, f32).withSharding({0}), 4) -> "{devices=[4,1]<=[4]}"
std::string shardingRepresentation(const Shape& shape, int numPartitions);
}  // namespace radix
