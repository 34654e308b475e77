// The MPI runtime of sharded execution: MPI's lifetime, the grid's communicators, and the
// collectives that compiled code calls (src/compiler/shard.cpp lowers shard ops to them).
#include "runtime/mpi.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "radix/dtype.h"
#include "radix/error.h"
#include "runtime/runtime.h"

namespace radix::detail::mpi {

namespace {

struct State {
  std::mutex mutex;  // MPI is initialized MPI_THREAD_SERIALIZED: one call at a time
  bool initialized = false;
  int rank = 0, size = 1;
  MPI_Comm control = MPI_COMM_NULL;             // host-side transfers (compiled objects)
  MPI_Comm exit = MPI_COMM_NULL;                // the exit barrier only
  std::map<int, MPI_Comm> partitionComms;       // numPartitions -> this replica's group
  std::map<int, int> replicasOf;                // numPartitions -> numReplicas it was set up with
};

State& state() {
  static State* s = new State;  // never destroyed: used by the atexit handler
  return *s;
}

// A rank that leaves early while others wait in a collective would hang the job: at exit every
// rank meets the others on a barrier of its own; whoever is not there in time (a rank still
// computing, or waiting for one that threw) makes this rank abort the whole job, non-zero.
double exitTimeoutSeconds() {
  const char* env = std::getenv("RADIX_MPI_EXIT_TIMEOUT");
  const double t = env ? std::atof(env) : 60.0;
  return t > 0 ? t : 60.0;
}

void finalizeAtExit() {
  State& s = state();
  if (!s.initialized) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MPI_Request request;
  MPI_Ibarrier(s.exit, &request);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(exitTimeoutSeconds());
  int done = 0;
  while (!done) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr,
                   "radix: rank %d exited, but other ranks did not reach their exit within %.0f s "
                   "(RADIX_MPI_EXIT_TIMEOUT): aborting the job\n",
                   s.rank, exitTimeoutSeconds());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& [p, comm] : s.partitionComms) MPI_Comm_free(&comm);
  s.partitionComms.clear();
  MPI_Comm_free(&s.control);
  MPI_Comm_free(&s.exit);
  MPI_Finalize();
}

std::terminate_handler previousTerminate = nullptr;

// An uncaught exception on one rank ends the job, with its message, instead of leaving the
// others blocked in a collective.
[[noreturn]] void terminateJob() {
  std::string what = "unknown exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
  }
  std::fprintf(stderr, "radix: rank %d terminated by an uncaught exception: %s\n", state().rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

MPI_Comm partitionComm(int partitions) {
  State& s = state();
  auto it = s.partitionComms.find(partitions);
  if (it == s.partitionComms.end()) {
    std::fprintf(stderr, "radix: rank %d: no grid of %d partitions was set up (Platform::withSharding)\n", s.rank,
                 partitions);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return it->second;
}

[[noreturn]] void fatal(const char* what) {
  std::fprintf(stderr, "radix: rank %d: %s\n", state().rank, what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

MPI_Datatype mpiType(DType d) {
  switch (d) {
    case DType::bool_: case DType::u8: return MPI_UINT8_T;
    case DType::i8: return MPI_INT8_T;
    case DType::i16: return MPI_INT16_T;
    case DType::u16: return MPI_UINT16_T;
    case DType::i32: return MPI_INT32_T;
    case DType::u32: return MPI_UINT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::u64: return MPI_UINT64_T;
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;  // f16, bf16: reduced through f32
  }
}

MPI_Op mpiOp(int32_t op, DType d) {
  if (d == DType::bool_) return op == RADIX_MPI_MIN || op == RADIX_MPI_PROD ? MPI_LAND : MPI_LOR;
  switch (op) {
    case RADIX_MPI_SUM: return MPI_SUM;
    case RADIX_MPI_MAX: return MPI_MAX;
    case RADIX_MPI_MIN: return MPI_MIN;
    case RADIX_MPI_PROD: return MPI_PROD;
    default: fatal("unknown reduction code in compiled code");
  }
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) fatal(what);
}

bool isHalf(DType d) { return d == DType::f16 || d == DType::bf16; }
float halfOf(DType d, uint16_t v) { return d == DType::f16 ? halfToFloat(v) : bf16ToFloat(v); }
uint16_t toHalf(DType d, float v) { return d == DType::f16 ? floatToHalf(v) : floatToBf16(v); }

// Reduces `count` elements in place (f16/bf16 through f32).
void allReduceInPlace(void* data, int64_t count, DType d, int32_t op, MPI_Comm comm) {
  if (count == 0) return;
  if (isHalf(d)) {
    std::vector<float> wide(static_cast<size_t>(count));
    auto* h = static_cast<uint16_t*>(data);
    for (int64_t i = 0; i < count; ++i) wide[i] = halfOf(d, h[i]);
    check(MPI_Allreduce(MPI_IN_PLACE, wide.data(), static_cast<int>(count), MPI_FLOAT, mpiOp(op, DType::f32), comm),
          "MPI_Allreduce failed");
    for (int64_t i = 0; i < count; ++i) h[i] = toHalf(d, wide[i]);
    return;
  }
  if (count > INT32_MAX) fatal("all_reduce of more than 2^31 elements");
  check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpiType(d), mpiOp(op, d), comm),
        "MPI_Allreduce failed");
}

void allGatherRaw(const void* in, void* out, size_t bytes, MPI_Comm comm) {
  if (bytes > static_cast<size_t>(INT32_MAX)) fatal("all_gather of more than 2 GiB per process");
  check(MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, comm),
        "MPI_Allgather failed");
}

}  // namespace

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

void initialize() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized) return;
  if (!launched())
    throw Error("[platform] MPI: this process was not started by mpirun (no OMPI_COMM_WORLD_SIZE or PMIX_RANK "
                "in the environment): run it under mpirun -np N");
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      throw Error("[platform] MPI_Init_thread failed");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  MPI_Comm_dup(MPI_COMM_WORLD, &s.control);
  MPI_Comm_dup(MPI_COMM_WORLD, &s.exit);
  s.initialized = true;
  std::atexit(finalizeAtExit);
  previousTerminate = std::set_terminate(terminateJob);
}

int worldRank() { return state().initialized ? state().rank : 0; }
int worldSize() { return state().initialized ? state().size : 1; }

void setupGrid(int numReplicas, int numPartitions) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialized) throw Error("[platform] MPI is not initialized");
  if (auto it = s.replicasOf.find(numPartitions); it != s.replicasOf.end()) {
    if (it->second != numReplicas)
      throw Error("[platform] a grid of " + std::to_string(numPartitions) + " partitions exists with " +
                  std::to_string(it->second) + " replicas; got " + std::to_string(numReplicas));
    return;
  }
  MPI_Comm comm;
  // Row-major grid (replica, partition): rank = replica * numPartitions + partition.
  check(MPI_Comm_split(MPI_COMM_WORLD, s.rank / numPartitions, s.rank % numPartitions, &comm), "MPI_Comm_split failed");
  s.partitionComms[numPartitions] = comm;
  s.replicasOf[numPartitions] = numReplicas;
}

int partitionIndex(int numPartitions) { return worldRank() % numPartitions; }

void allGatherBytes(const void* in, void* out, size_t bytes, int numPartitions) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  allGatherRaw(in, out, bytes, partitionComm(numPartitions));
}

void broadcastFromRoot(std::string& bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  uint64_t n = bytes.size();
  check(MPI_Bcast(&n, 1, MPI_UINT64_T, 0, s.control), "MPI_Bcast failed");
  if (s.rank != 0) bytes.assign(n, '\0');
  for (uint64_t done = 0; done < n;) {
    const int chunk = static_cast<int>(std::min<uint64_t>(n - done, 1u << 30));
    check(MPI_Bcast(bytes.data() + done, chunk, MPI_BYTE, 0, s.control), "MPI_Bcast failed");
    done += static_cast<uint64_t>(chunk);
  }
}

int64_t broadcastInt(int64_t value) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  check(MPI_Bcast(&value, 1, MPI_INT64_T, 0, s.control), "MPI_Bcast failed");
  return value;
}

}  // namespace radix::detail::mpi

using namespace radix;
using namespace radix::detail::mpi;

extern "C" {

void radix_mpi_all_reduce(int64_t in, int64_t out, int64_t count, int32_t dtype, int32_t op, int32_t partitions) {
  const DType d = static_cast<DType>(dtype);
  std::lock_guard<std::mutex> lock(state().mutex);
  void* o = reinterpret_cast<void*>(out);
  if (in != out && count > 0) std::memcpy(o, reinterpret_cast<const void*>(in), static_cast<size_t>(count) * sizeOf(d));
  allReduceInPlace(o, count, d, op, partitionComm(partitions));
}

void radix_mpi_all_gather(int64_t in, int64_t out, int64_t outer, int64_t inner, int32_t dtype, int32_t partitions) {
  const size_t es = sizeOf(static_cast<DType>(dtype));
  const size_t block = static_cast<size_t>(outer * inner) * es;
  std::lock_guard<std::mutex> lock(state().mutex);
  MPI_Comm comm = partitionComm(partitions);
  auto* o = reinterpret_cast<char*>(out);
  if (outer == 1) {
    allGatherRaw(reinterpret_cast<const void*>(in), o, block, comm);
    return;
  }
  std::vector<char> all(block * static_cast<size_t>(partitions));
  allGatherRaw(reinterpret_cast<const void*>(in), all.data(), block, comm);
  const size_t row = static_cast<size_t>(inner) * es;
  for (int64_t i = 0; i < outer; ++i)
    for (int32_t p = 0; p < partitions; ++p)
      std::memcpy(o + (static_cast<size_t>(i) * partitions + p) * row, all.data() + p * block + i * row, row);
}

void radix_mpi_reduce_scatter(int64_t in, int64_t out, int64_t outer, int64_t inner, int32_t dtype, int32_t op,
                              int32_t partitions) {
  const DType d = static_cast<DType>(dtype);
  const size_t es = sizeOf(d);
  const size_t row = static_cast<size_t>(inner) * es;
  const size_t block = static_cast<size_t>(outer) * row;
  std::lock_guard<std::mutex> lock(state().mutex);
  MPI_Comm comm = partitionComm(partitions);
  // [outer, P, inner] -> [P, outer, inner], reduced over the group, block p kept by partition p.
  std::vector<char> packed(block * static_cast<size_t>(partitions));
  const auto* src = reinterpret_cast<const char*>(in);
  for (int32_t p = 0; p < partitions; ++p)
    for (int64_t i = 0; i < outer; ++i)
      std::memcpy(packed.data() + p * block + i * row, src + (static_cast<size_t>(i) * partitions + p) * row, row);
  const int64_t count = outer * inner;
  if (isHalf(d) || d == DType::bool_) {
    // Rare: reduce everything, keep this partition's block.
    allReduceInPlace(packed.data(), count * partitions, d, op, comm);
    int index = 0;
    MPI_Comm_rank(comm, &index);
    std::memcpy(reinterpret_cast<void*>(out), packed.data() + static_cast<size_t>(index) * block, block);
    return;
  }
  if (count > INT32_MAX) fatal("reduce_scatter of more than 2^31 elements per process");
  check(MPI_Reduce_scatter_block(packed.data(), reinterpret_cast<void*>(out), static_cast<int>(count), mpiType(d),
                                 mpiOp(op, d), comm),
        "MPI_Reduce_scatter_block failed");
}

void radix_mpi_all_to_all(int64_t in, int64_t out, int64_t splitOuter, int64_t splitInner, int64_t concatOuter,
                          int64_t concatInner, int32_t dtype, int32_t partitions) {
  const size_t es = sizeOf(static_cast<DType>(dtype));
  const size_t block = static_cast<size_t>(splitOuter * splitInner) * es;
  std::lock_guard<std::mutex> lock(state().mutex);
  MPI_Comm comm = partitionComm(partitions);
  std::vector<char> send(block * static_cast<size_t>(partitions)), recv(send.size());
  const auto* src = reinterpret_cast<const char*>(in);
  const size_t srow = static_cast<size_t>(splitInner) * es;
  for (int32_t p = 0; p < partitions; ++p)
    for (int64_t i = 0; i < splitOuter; ++i)
      std::memcpy(send.data() + p * block + i * srow, src + (static_cast<size_t>(i) * partitions + p) * srow, srow);
  if (block > static_cast<size_t>(INT32_MAX)) fatal("all_to_all of more than 2 GiB per block");
  check(MPI_Alltoall(send.data(), static_cast<int>(block), MPI_BYTE, recv.data(), static_cast<int>(block), MPI_BYTE,
                     comm),
        "MPI_Alltoall failed");
  auto* dst = reinterpret_cast<char*>(out);
  const size_t crow = static_cast<size_t>(concatInner) * es;
  for (int32_t q = 0; q < partitions; ++q)
    for (int64_t i = 0; i < concatOuter; ++i)
      std::memcpy(dst + (static_cast<size_t>(i) * partitions + q) * crow, recv.data() + q * block + i * crow, crow);
}

int64_t radix_mpi_partition_index(int32_t partitions) { return partitionIndex(partitions); }

}  // extern "C"
