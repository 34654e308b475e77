#pragma once
// The MPI runtime of sharded execution (mpi.cpp). No MPI types here: the compiler and the host
// code include this header without MPI's include paths. Compiled code calls the extern "C"
// collectives below on raw buffers.
#include <cstddef>
#include <cstdint>
#include <string>

namespace radix::detail::mpi {

/// True when an MPI launcher (mpirun, PMIx) started this process.
bool launched();
/// MPI_Init_thread once per process (MPI_Finalize at exit, see mpi.cpp); throws
/// radix::Error("[platform] ...") when not launched by mpirun.
void initialize();
/// Rank and size of MPI_COMM_WORLD; 0 and 1 without MPI.
int worldRank();
int worldSize();
/// Creates the communicators of a grid of numReplicas x numPartitions processes (collective over
/// the world; every rank calls it in the same order). Idempotent for equal counts.
void setupGrid(int numReplicas, int numPartitions);
/// This process's index among the `numPartitions` partitions of its replica.
int partitionIndex(int numPartitions);
/// MPI_Allgather of `bytes` per process over the partition group: out holds numPartitions blocks.
void allGatherBytes(const void* in, void* out, size_t bytes, int numPartitions);
/// Rank 0 of the world sends `bytes` to every rank (collective over the world).
void broadcastFromRoot(std::string& bytes);
/// Broadcasts one int from rank 0 of the world.
int64_t broadcastInt(int64_t value);

}  // namespace radix::detail::mpi

extern "C" {
/// Reduction codes of the collectives: sum, max, min, product.
enum RadixMpiOp : int32_t { RADIX_MPI_SUM = 0, RADIX_MPI_MAX = 1, RADIX_MPI_MIN = 2, RADIX_MPI_PROD = 3 };
/// out[i] = op over the partition group of in[i]; `count` elements of radix::DType `dtype`.
void radix_mpi_all_reduce(int64_t in, int64_t out, int64_t count, int32_t dtype, int32_t op, int32_t partitions);
/// in viewed as [outer, inner] (inner: the gathered axis and those after it) -> out [outer,
/// partitions, inner], block p from partition p.
void radix_mpi_all_gather(int64_t in, int64_t out, int64_t outer, int64_t inner, int32_t dtype, int32_t partitions);
/// in viewed as [outer, partitions, inner] -> out [outer, inner]: block p, reduced over the
/// group, lands on partition p.
void radix_mpi_reduce_scatter(int64_t in, int64_t out, int64_t outer, int64_t inner, int32_t dtype, int32_t op,
                              int32_t partitions);
/// in viewed as [splitOuter, partitions, splitInner]: block p goes to partition p; the block from
/// partition q lands in out viewed as [concatOuter, partitions, concatInner] at q.
void radix_mpi_all_to_all(int64_t in, int64_t out, int64_t splitOuter, int64_t splitInner, int64_t concatOuter,
                          int64_t concatInner, int32_t dtype, int32_t partitions);
/// This process's partition index (what shard.process_multi_index lowers to).
int64_t radix_mpi_partition_index(int32_t partitions);
}
