#pragma once
/// Explicit collectives for code written per shard (JAX's shard_map): inside radix::compile or
/// radix::call on a platform sharded over processes (docs/sharding.md), each process's tensor is
/// its own value, and these combine them over the numPartitions processes of its replica. On an
/// unsharded platform each is the identity. They are traced as upstream `shard` ops and lowered
/// to MPI (src/runtime/mpi.cpp).
#include "radix/loc.h"
#include "radix/tensor.h"

namespace radix {

/// How allReduce and reduceScatter combine the processes' values.
enum class ReduceOp { sum, max, min };

/// Every process gets the elementwise reduction of all: allReduce({4,8}, ReduceOp::sum) -> {4,8}
Tensor allReduce(const Tensor& t, ReduceOp op = ReduceOp::sum, Loc loc = Loc::current());
/// Concatenates the processes' tensors along `axis` in partition order: allGather({4,8}, 0) -> {4P,8}
Tensor allGather(const Tensor& t, Axis axis, Loc loc = Loc::current());
/// Reduces, then keeps this partition's block of `axis` (divisible by P): reduceScatter({4P,8}, 0) -> {4,8}
Tensor reduceScatter(const Tensor& t, Axis axis, ReduceOp op = ReduceOp::sum, Loc loc = Loc::current());
/// Splits `splitAxis` into P blocks, sends block p to partition p, and concatenates the received
/// blocks along `concatAxis`: allToAll({8P,4}, 0, 1) -> {8,4P}
Tensor allToAll(const Tensor& t, Axis splitAxis, Axis concatAxis, Loc loc = Loc::current());

}  // namespace radix
