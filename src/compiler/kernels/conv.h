#pragma once
// Convolutions on the GEMM kernels (no MLIR). Compiled code calls radix_kernel_conv with a
// descriptor of the convolution's loops: each loop's size and its strides in the input (A), the
// kernel (B) and the output (C), grouped as M (input and output: batch, output positions), N
// (kernel and output: output features), K (input and kernel: reduction) and G (groups). Each
// group is one GEMM whose operands are read through offset tables (implicit GEMM: the im2col
// happens in the packing of A or B); depthwise groups run a direct kernel. conv_dispatch.cpp
// plans the call (tables, orientation, path); the ISA TUs (conv_impl.h) run the plans.
#include <cstdint>
#include <functional>
#include <memory>

#include "compiler/kernels/kernels.h"

namespace radix::kernels {

/// One loop of a convolution: its size and strides (in elements) in A, B and C.
struct ConvDim {
  int64_t size = 1, sa = 0, sb = 0, sc = 0;
};

/// C[m, n] += sum_k A[m, k] B[k, n] for each group, every index a list of loops.
struct ConvProblem {
  const void* a = nullptr;
  const void* b = nullptr;
  float* c = nullptr;
  const void* aBase = nullptr;  // a's and b's buffers (the packed-weight cache's keys)
  const void* bBase = nullptr;
  const int64_t* desc = nullptr;  // the call's descriptor and its length in words
  int64_t descWords = 0;
  Elem aType = Elem::f32, bType = Elem::f32;
  ConvDim group;  // the group loop (size 1 when ungrouped)
  int nm = 0, nn = 0, nk = 0;
  static constexpr int kMaxDims = 12;
  ConvDim m[kMaxDims], n[kMaxDims], k[kMaxDims];
};

/// Paths a convolution call took (tests prove the kernel path ran).
enum class ConvPath : int32_t { gemm = 0, direct = 1, plain = 2, pool = 3, rows = 4 };
constexpr int kConvPathCount = 5;
/// Calls of radix_kernel_conv that took `path` since the process started.
uint64_t convCallCount(ConvPath path);
/// Tabled GEMM calls that ran on AMX tiles (bf16 x bf16 on an AMX host).
uint64_t convAmxCallCount();

/// One group's GEMM C[i, j] += X[i, k] Y[k, j] through offset tables (conv_dispatch.cpp builds
/// them): X[i, k] = x[xRow[i] + xK[k]], Y[k, j] = y[yK[k] + yCol[j]], C[i, j] = c[cRow[i] +
/// cCol[j]]; from column j on, yRun[j] columns of Y's row are equally spaced, yStep[j] apart
/// (1: consecutive elements). Group g
/// moves x, y and c by g * gx, gy, gc elements.
struct ConvGemmPlan {
  const void* x = nullptr;
  const void* y = nullptr;
  float* c = nullptr;
  Elem xType = Elem::f32, yType = Elem::f32;
  int64_t groups = 1, gx = 0, gy = 0, gc = 0;
  int64_t m = 0, n = 0, k = 0;
  const int64_t *xRow = nullptr, *xK = nullptr, *yK = nullptr, *yCol = nullptr, *cRow = nullptr, *cCol = nullptr;
  const int32_t *yRun = nullptr, *yStep = nullptr;
  bool overwrite = false;  // C holds no values yet: each tile is zeroed, in cache, before its first K block
  // X's buffer where X is the convolution's kernel (not the input), and the call's descriptor,
  // which determines X's tables: X packed whole is cached under them (xPackedCached) where that
  // buffer is a pinned argument.
  const void* xBase = nullptr;
  const int64_t* desc = nullptr;
  int64_t descWords = 0;
};

/// X packed whole by `pack` (`bytes`, the kernel's `layout`), from the packed-weight cache where
/// X's buffer is a pinned argument (a model's weights), else null: the caller packs it per call.
/// `keep` holds the cached copy for the call.
const void* xPackedCached(const ConvGemmPlan& g, int32_t layout, size_t bytes, const std::function<void(void* dst)>& pack,
                          std::shared_ptr<const void>& keep);

/// X packed whole for a call (every group, all of K) at most this large.
constexpr int64_t kConvXPackBytes = int64_t(16) << 20;

/// The extended-grid convolution (C's positions along the GEMM's columns, read from the input
/// in place, without a gather: f32, and bf16 on avx512bf16 hosts, whose pairs are interleaved
/// per tile). g is the tabled plan (X the kernel, Y the input) without its column tables
/// (n = 0, no yCol, cCol, yRun, yStep). The last two position dims (h rows of w) sit on a grid whose rows are
/// `ext` columns apart: position (r, s) is column r * ext + s and reads y[yK[k] + r * ext + s],
/// since their input strides are ext and 1. Each k's run of columns is then one contiguous run
/// of the input; the ext - w columns past each row are computed and dropped. The other position
/// dims (the batch) are `outer` offsets oy into y and oc into c.
///
/// Stride 2 reaches the grid through `phases` (planes > 0): the input is first copied, plane
/// by plane (`plane` elements of `rows` rows `pitch` apart: an image channel), into four phase
/// planes of (rows + 1) / 2 rows of (pitch + 1) / 2 elements, element (y, x) going to phase
/// (y % 2, x % 2) at (y / 2, x / 2). g's yK, oy and gy, and ext, are then offsets in the phased
/// copy, where the output positions read consecutive elements. Only the first `extent` input
/// elements are read. With outerPlanes > 0, each outer index reads its own `outerPlanes` planes
/// from oy's, and they are copied just before its tiles run (in cache, not a whole batch ahead).
struct ConvPhases {
  int64_t planes = 0, plane = 0, rows = 0, pitch = 0, extent = 0, outerPlanes = 0;
};
struct ConvRowsPlan {
  ConvGemmPlan g;
  int64_t outer = 1, h = 1, w = 1, ext = 1;
  const int64_t *oy = nullptr, *oc = nullptr;
  bool overwrite = false;  // C = the convolution (kConvOverwrite), else C += it
  ConvPhases phases;
};

/// The extended grid on AMX tiles (bf16), where K is channels x taps: per outer index, the
/// input's channel pairs are interleaved once into planes (zero past the input and the
/// channels), and each tap's B tiles load from them in place, 16 columns of 16 channel pairs at
/// the tap's offset. rows.g.yK[c * taps + t] is c * cs + tapOff[t], cs the channels' input
/// stride; with rows.phases (stride 2), cs is one phase `plane` and yK's channel step is the
/// copy's four phase planes, which the interleave writes per channel pair.
struct ConvRowsAmxPlan {
  const ConvRowsPlan* rows = nullptr;
  int64_t cin = 0, taps = 0, cs = 0;
  const int64_t* tapOff = nullptr;
  uint16_t* cBf16 = nullptr;  // kConvOutBf16: C (rows.g.c's offsets) in bf16, written rounded
};

/// What the direct kernel folds into C: A * B (convolutions), max(C, A) or C + A (pooling).
enum class DirectOp : int32_t { mulAdd = 0, max = 1, sum = 2 };

/// The direct kernel: for each of `outer` output rows o and each of `kn` window taps t,
/// C[oc[o] + v * vsc] += A[oa[o] + ka[t] + v * vsa] * B[ob[o] + kb[t] + v * vsb] for v < vn
/// (or max / sum of A alone for pooling).
struct ConvDirectPlan {
  DirectOp op = DirectOp::mulAdd;
  const void* a = nullptr;
  const void* b = nullptr;
  float* c = nullptr;
  Elem aType = Elem::f32, bType = Elem::f32;
  int64_t outer = 0, kn = 0, vn = 1, vsa = 0, vsb = 0, vsc = 0;
  const int64_t *oa = nullptr, *ob = nullptr, *oc = nullptr, *ka = nullptr, *kb = nullptr;
};

/// Per ISA TU: the tabled GEMM (bf16 pairs where the ISA has them) and the direct kernel.
void runConvGemmX86_64(const ConvGemmPlan& p, int threads);
void runConvGemmAvx2(const ConvGemmPlan& p, int threads);
void runConvGemmAvx512(const ConvGemmPlan& p, int threads, bool bf16);
void runConvRowsX86_64(const ConvRowsPlan& p, int threads);
void runConvRowsAvx2(const ConvRowsPlan& p, int threads);
/// bf16: bf16 x bf16 on vdpbf16ps (call only where the host has avx512bf16).
void runConvRowsAvx512(const ConvRowsPlan& p, int threads, bool bf16);
/// amx.cpp: bf16 x bf16 on tdpbf16ps tiles (call only where amxBf16Available()).
void runConvGemmAmx(const ConvGemmPlan& p, int threads);
void runConvRowsAmx(const ConvRowsAmxPlan& p, int threads);
void runConvDirectX86_64(const ConvDirectPlan& p, int threads);
void runConvDirectAvx2(const ConvDirectPlan& p, int threads);
void runConvDirectAvx512(const ConvDirectPlan& p, int threads);

/// Descriptor layout (i64 words): version, types (aType | bType << 8, plus kConvOverwrite), nm,
/// nn, nk, then the group dim and the nm + nn + nk dims as (size, sa, sb, sc).
constexpr int64_t kConvDescVersion = 1;
/// In the types word: C holds no values yet (the zero fill before the convolution was dropped),
/// so the call writes every element of C rather than adding to it.
constexpr int64_t kConvOverwrite = int64_t(1) << 16;
/// In the types word, with kConvOverwrite: C is bf16 (the f32 sums rounded to nearest even, as
/// arith.truncf does), the rounding that followed the convolution folded into its call.
constexpr int64_t kConvOutBf16 = int64_t(1) << 17;
/// The version of descriptors that set kConvOutBf16 (and only of those): a runtime from before
/// the flag refuses them (its call returns) rather than writing f32 sums into a bf16 buffer.
constexpr int64_t kConvDescVersionOutBf16 = 2;
constexpr int kConvDescHeader = 5;
/// Pooling descriptor: version, aType, DirectOp, parallel dims, window dims, then each dim as
/// (size, sa, sc).
constexpr int kPoolDescHeader = 5;

/// radix_cuda_conv's descriptor (runtime/cudnn.cpp; i64 words): the input's and kernel's Elem,
/// the spatial axes ns, accumulate (1: y += conv, 0: y = conv), n, c (input features), k
/// (output features), groups, then per spatial axis kCudaConvAxisWords words (input size,
/// window, output size, stride, dilation, zeros before, zeros after), then the strides of x {n,
/// c, spatial...}, w {k, c / groups, window...} and y {n, k, spatial...}.
enum CudaConvWord : int {
  kCudaConvType = 0,
  kCudaConvSpatial,
  kCudaConvAccumulate,
  kCudaConvN,
  kCudaConvC,
  kCudaConvK,
  kCudaConvGroups,
  kCudaConvAxes,  // kCudaConvAxisWords per spatial axis, then the strides
};
constexpr int kCudaConvAxisWords = 7;

}  // namespace radix::kernels

extern "C" {
/// The symbol compiled code calls for a convolution: base addresses and element offsets of the
/// input, kernel and output buffers, the address of the descriptor (kConvDesc* layout), the
/// thread count (0: one per core) and the compile target's Isa.
void radix_kernel_conv(int64_t aBase, int64_t aOffset, int64_t bBase, int64_t bOffset, int64_t cBase, int64_t cOffset,
                       int64_t desc, int64_t threads, int64_t isa);
/// The symbol compiled code calls for max/avg pooling (the window sum; the scale stays a
/// linalg op): input and output as above, the address of a kPoolDesc* descriptor.
void radix_kernel_pool(int64_t aBase, int64_t aOffset, int64_t cBase, int64_t cOffset, int64_t desc, int64_t threads,
                       int64_t isa);
}
