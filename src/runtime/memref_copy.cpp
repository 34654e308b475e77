// memrefCopy, which MLIR lowers a strided memref.copy to: the runtime's own, so that compiled
// code needs no MLIR library (the signature and semantics of MLIR's CRunnerUtils).
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
struct UnrankedMemRef {
  int64_t rank;
  void* descriptor;
};
// {allocated, aligned, offset, sizes[rank], strides[rank]}
struct Descriptor {
  char* allocated;
  char* aligned;
  int64_t offset;
  int64_t sizesAndStrides[1];
};
}  // namespace

extern "C" void memrefCopy(int64_t elemSize, UnrankedMemRef* srcArg, UnrankedMemRef* dstArg) {
  const int64_t rank = srcArg->rank;
  const auto* src = static_cast<const Descriptor*>(srcArg->descriptor);
  const auto* dst = static_cast<const Descriptor*>(dstArg->descriptor);
  const int64_t* sizes = src->sizesAndStrides;
  const int64_t* srcStrides = src->sizesAndStrides + rank;
  const int64_t* dstStrides = dst->sizesAndStrides + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0) return;
  const char* from = src->aligned + src->offset * elemSize;
  char* to = dst->aligned + dst->offset * elemSize;
  if (rank == 0) {
    std::memcpy(to, from, static_cast<size_t>(elemSize));
    return;
  }
  // The innermost axis is one memcpy when both sides are contiguous along it.
  const bool innerRun = srcStrides[rank - 1] == 1 && dstStrides[rank - 1] == 1;
  const int64_t run = innerRun ? sizes[rank - 1] : 1;
  const int64_t outer = innerRun ? rank - 1 : rank;
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t read = 0, write = 0;
  for (;;) {
    std::memcpy(to + write * elemSize, from + read * elemSize, static_cast<size_t>(run * elemSize));
    int64_t axis = outer - 1;
    for (; axis >= 0; --axis) {
      read += srcStrides[axis];
      write += dstStrides[axis];
      if (++index[static_cast<size_t>(axis)] != sizes[axis]) break;
      read -= sizes[axis] * srcStrides[axis];
      write -= sizes[axis] * dstStrides[axis];
      index[static_cast<size_t>(axis)] = 0;
    }
    if (axis < 0) return;
  }
}
