// Convolutions on the GEMM kernels (src/compiler/kernels/conv*): each case against a naive
// double reference and against the generic loop lowering (RADIX_CONV_KERNELS=0, the
// reference path), on odd shapes, strides, padding, dilation, groups (depthwise included),
// 1-D/2-D/3-D, NCHW and NHWC, f32 and bf16, for the host's ISA and the lower ones it runs
// (CompileOptions::targetCpu). The path counters prove the kernel ran.
#include <gtest/gtest.h>
#include <radix/radix.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/kernels/conv.h"
#include "compiler/kernels/kernels.h"
#include "io_testing.h"

namespace {

using radix::DType;
using radix::Shape;
using radix::Tensor;
namespace kernels = radix::kernels;
using Dims = std::vector<int64_t>;
using Path = kernels::ConvPath;

struct Case {
  const char* name;
  int64_t batch, channels, outputs;
  Dims spatial, kernel, strides, dilation;
  std::vector<std::pair<int64_t, int64_t>> padding;
  int64_t groups;
  bool nhwc;
  Path path;
};

// Logical index order everywhere: {b, c, spatial...} for data, {o, i, k...} for kernels.
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"1d_plain", 1, 3, 5, {17}, {3}, {1}, {1}, {}, 1, false, Path::gemm},
      {"1d_stride2_pad_dilation", 3, 5, 7, {23}, {3}, {2}, {2}, {{2, 1}}, 1, false, Path::gemm},
      {"1d_nhwc", 3, 9, 11, {19}, {4}, {1}, {1}, {{1, 2}}, 1, true, Path::gemm},
      {"2d_3x3_s1_pad", 1, 9, 13, {11, 10}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      // 7 x 7 positions on a grid of 9 columns a row (ext 9): junk columns in every tile, a short
      // last tile, 33 outputs (partial row panels at MR 8, 6 and 4) and two images (outer).
      {"2d_3x3_s1_7x7_batch2", 2, 20, 33, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      // Rows of positions 2 input rows apart (stride 2 along h only): each a grid of its own.
      {"2d_s2x1_rows_apart", 2, 6, 11, {9, 37}, {3, 3}, {2, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      // Stride 2 on the grid (f32): the input copied into 2 x 2 phase planes per channel, here with
      // an odd padded width (11, phase rows of 6 and 5) and odd height (15).
      {"2d_3x3_s2_batch3", 3, 5, 10, {13, 9}, {3, 3}, {2, 2}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      // Even padded width and height (14 x 12); groups whose input channels are whole planes apart.
      {"2d_3x3_s2_even_groups2", 2, 8, 12, {12, 10}, {3, 3}, {2, 2}, {1, 1}, {{1, 1}, {1, 1}}, 2, false, Path::rows},
      // No padding: the last input row and column are never read (the copy stops at the last
      // element read); K = 32 * 9 = 288 runs in two chunks.
      {"2d_3x3_s2_unread_edge_k288", 1, 32, 9, {10, 10}, {3, 3}, {2, 2}, {1, 1}, {}, 1, false, Path::rows},
      // Dilation 2 puts the taps two rows apart: no phase plane holds a window, the tabled GEMM runs it.
      {"2d_3x3_s2_dilation2", 1, 4, 6, {13, 12}, {3, 3}, {2, 2}, {2, 2}, {{2, 2}, {2, 2}}, 1, false, Path::gemm},
      {"2d_nhwc_s2", 3, 7, 17, {12, 9}, {3, 3}, {2, 2}, {1, 1}, {{1, 1}, {0, 1}}, 1, true, Path::gemm},
      {"2d_nhwc_dilation", 1, 6, 9, {13, 11}, {3, 2}, {1, 2}, {2, 1}, {{2, 2}, {0, 0}}, 1, true, Path::gemm},
      // K = 40 * 9 = 360: two K blocks of the packing.
      {"2d_k360_nchw", 1, 40, 7, {9, 8}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      {"2d_k360_nhwc", 3, 40, 19, {6, 7}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, true, Path::gemm},
      {"2d_7x7_s2_stem", 1, 3, 10, {23, 21}, {7, 7}, {2, 2}, {1, 1}, {{3, 3}, {3, 3}}, 1, false, Path::rows},
      // Output rows of 38 positions read at stride 2: vector pairs' even elements (2 x 16 + 6, or
      // 4 x 8 + 6), the last one next to the end of an input row.
      {"2d_3x3_s2_wide_rows", 1, 3, 5, {5, 75}, {3, 3}, {2, 2}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      {"2d_groups2", 3, 6, 10, {9, 8}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 2, false, Path::rows},
      {"2d_groups3_nhwc", 1, 9, 12, {7, 9}, {3, 1}, {2, 1}, {1, 1}, {{1, 1}, {0, 0}}, 3, true, Path::gemm},
      // K = 130 * 9 = 1170: two K blocks of the AMX packing; NHWC with whole 32 x 32 C blocks.
      {"2d_k1170_nchw", 1, 130, 40, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      {"2d_whole_tiles_nhwc", 2, 32, 64, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, true, Path::gemm},
      // More positions than one gathered block of Y (128 at K = 576): X is packed once per call,
      // in two equal K blocks; 13 outputs leave a partial row panel.
      {"2d_k576_x_packed_once", 1, 64, 13, {14, 13}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      // The same per group, with an odd K (63 * 9 = 567: a lone last bf16 pair) and 9 outputs a group.
      {"2d_k567_groups2_x_packed_once", 2, 126, 18, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 2, false,
       Path::rows},
      // bf16 on AMX: the grid on the tiles (K as 64 channels x 9 taps), three images (one per
      // thread at 2 threads), 40 outputs (a partial 32-row panel), 349 grid columns (a partial tile).
      {"2d_amx_grid_batch3", 3, 64, 40, {9, 37}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      // One image that two threads share; 96 channels (three 32-channel steps) and a 1 x 5 kernel.
      {"2d_amx_grid_shared", 1, 96, 48, {15, 20}, {1, 5}, {1, 1}, {1, 1}, {{0, 0}, {2, 2}}, 1, false, Path::rows},
      {"1d_amx_grid", 2, 64, 20, {50}, {5}, {1}, {1}, {{2, 2}}, 1, false, Path::rows},
      // Stride 2 on AMX's grid: each channel pair's phase planes interleaved from the input (odd
      // padded height 17, width 15), two images, 36 outputs.
      {"2d_amx_grid_s2_batch2", 2, 64, 36, {15, 13}, {3, 3}, {2, 2}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      {"2d_1x1_plain", 1, 13, 9, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {}, 1, false, Path::plain},
      {"2d_1x1_batch3", 3, 13, 9, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {}, 1, false, Path::plain},
      {"2d_1x1_nhwc_batch3", 3, 13, 9, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {}, 1, true, Path::plain},
      {"2d_1x1_s2_downsample", 3, 10, 17, {9, 11}, {1, 1}, {2, 2}, {1, 1}, {}, 1, false, Path::gemm},
      // One image: the output rows would be the batch of plain GEMMs of 6 columns; the tabled
      // GEMM takes them. With 65 columns and 64 outputs a row, the plain GEMM keeps them.
      {"2d_1x1_s2_one_image", 1, 10, 17, {9, 11}, {1, 1}, {2, 2}, {1, 1}, {}, 1, false, Path::gemm},
      {"2d_1x1_s2_wide_rows", 1, 5, 64, {3, 130}, {1, 1}, {2, 2}, {1, 1}, {}, 1, false, Path::plain},
      {"2d_depthwise", 3, 11, 11, {10, 9}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 11, false, Path::direct},
      {"2d_depthwise_s2_nhwc", 1, 10, 10, {11, 12}, {3, 3}, {2, 2}, {1, 1}, {{1, 1}, {1, 1}}, 10, true, Path::direct},
      {"2d_depthwise_multiplier2", 1, 5, 10, {9, 9}, {5, 3}, {1, 2}, {1, 1}, {{2, 2}, {1, 1}}, 5, false, Path::direct},
      {"3d", 3, 3, 5, {5, 6, 7}, {2, 3, 3}, {1, 2, 1}, {1, 1, 2}, {{0, 1}, {1, 1}, {2, 2}}, 1, false, Path::gemm},
      {"3d_nhwc", 1, 4, 6, {5, 4, 6}, {3, 2, 3}, {1, 1, 2}, {1, 1, 1}, {{1, 1}, {0, 0}, {1, 1}}, 1, true, Path::gemm},
  };
  return c;
}

Dims dataDims(const Case& c, int64_t channels, const Dims& spatial) {
  Dims d{c.batch};
  if (!c.nhwc) d.push_back(channels);
  d.insert(d.end(), spatial.begin(), spatial.end());
  if (c.nhwc) d.push_back(channels);
  return d;
}

Dims outSpatial(const Case& c) {
  Dims o;
  for (size_t i = 0; i < c.spatial.size(); ++i) {
    const int64_t lo = c.padding.empty() ? 0 : c.padding[i].first, hi = c.padding.empty() ? 0 : c.padding[i].second;
    o.push_back((lo + c.spatial[i] + hi - ((c.kernel[i] - 1) * c.dilation[i] + 1)) / c.strides[i] + 1);
  }
  return o;
}

// Row-major offset of logical (b, c, spatial) in the case's layout.
int64_t offsetOf(const Case& c, int64_t channels, const Dims& spatial, int64_t b, int64_t ch, const Dims& at) {
  const Dims dims = dataDims(c, channels, spatial);
  Dims idx{b};
  if (!c.nhwc) idx.push_back(ch);
  idx.insert(idx.end(), at.begin(), at.end());
  if (c.nhwc) idx.push_back(ch);
  int64_t o = 0;
  for (size_t i = 0; i < dims.size(); ++i) o = o * dims[i] + idx[i];
  return o;
}

bool step(Dims& idx, const Dims& dims) {
  for (size_t i = dims.size(); i-- > 0;) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

std::vector<double> reference(const Case& c, const std::vector<double>& x, const std::vector<double>& w) {
  const Dims os = outSpatial(c);
  const int64_t cg = c.channels / c.groups, og = c.outputs / c.groups;
  int64_t outCount = c.batch * c.outputs;
  for (int64_t d : os) outCount *= d;
  std::vector<double> out(static_cast<size_t>(outCount));
  const size_t ns = c.spatial.size();
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t o = 0; o < c.outputs; ++o) {
      Dims p(ns, 0);
      do {
        double s = 0;
        for (int64_t i = 0; i < cg; ++i) {
          Dims k(ns, 0);
          do {
            Dims at(ns);
            bool inside = true;
            for (size_t d = 0; d < ns; ++d) {
              const int64_t lo = c.padding.empty() ? 0 : c.padding[d].first;
              at[d] = p[d] * c.strides[d] + k[d] * c.dilation[d] - lo;
              inside = inside && at[d] >= 0 && at[d] < c.spatial[d];
            }
            if (!inside) continue;
            int64_t wo = o * cg + i;
            for (size_t d = 0; d < ns; ++d) wo = wo * c.kernel[d] + k[d];
            s += x[static_cast<size_t>(offsetOf(c, c.channels, c.spatial, b, (o / og) * cg + i, at))] * w[static_cast<size_t>(wo)];
          } while (step(k, c.kernel));
        }
        out[static_cast<size_t>(offsetOf(c, c.outputs, os, b, o, p))] = s;
      } while (step(p, os));
    }
  return out;
}

Tensor randomTensor(const radix::Platform& cpu, const Dims& dims, DType dtype, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return Tensor::fromValues(cpu, Shape(dims, dtype), v);
}

Tensor::ConvOptions optionsOf(const Case& c) {
  Tensor::ConvOptions o;
  const int64_t rank = static_cast<int64_t>(c.spatial.size()) + 2;
  if (c.nhwc) {
    o.inputBatch = 0;
    o.inputFeature = rank - 1;
    for (int64_t i = 1; i < rank - 1; ++i) o.inputSpatial.push_back(i);
  }
  o.strides = c.strides;
  o.rhsDilation = c.dilation;
  o.padding = c.padding;
  o.featureGroups = c.groups;
  return o;
}

// Plain 1x1 convolutions may reach radix_kernel_contract itself: unit-dim folding makes them
// contractions before the conv lowering sees them.
uint64_t calls(Path p) {
  uint64_t n = kernels::convCallCount(p);
  if (p == Path::plain)
    for (int i = 0; i < kernels::kIsaCount; ++i)
      n += kernels::callCount(kernels::Path::gemm, kernels::Isa(i)) + kernels::callCount(kernels::Path::gemv, kernels::Isa(i));
  return n;
}

// Sets RADIX_CONV_KERNELS for one scope.
struct ConvKernelsOff {
  ConvKernelsOff() { setenv("RADIX_CONV_KERNELS", "0", 1); }
  ~ConvKernelsOff() { unsetenv("RADIX_CONV_KERNELS"); }
};

// fn compiled without the convolution kernels (the generic loops, the reference lowering) and
// run on args.
template <class Fn, class... Args>
std::vector<double> throughLoops(Fn fn, const Args&... args) {
  ConvKernelsOff off;
  radix::CompileOptions plain;
  plain.cache = false;
  const radix::Platform ref = radix::Platform::cpu().withOptions(plain);
  return radix::compile(ref, fn, args...)(args...).template toVector<double>();
}

std::vector<double> run(const Case& c, DType dtype, int threads, const std::string& targetCpu, bool kernelsOn) {
  radix::CompileOptions options;
  options.threads = threads;
  options.targetCpu = targetCpu;
  options.cache = false;
  const radix::Platform cpu = radix::Platform::cpu().withOptions(options);
  Dims kdims{c.outputs, c.channels / c.groups};
  kdims.insert(kdims.end(), c.kernel.begin(), c.kernel.end());
  Tensor x = randomTensor(cpu, dataDims(c, c.channels, c.spatial), dtype, 1);
  Tensor w = randomTensor(cpu, kdims, dtype, 2);
  const Tensor::ConvOptions o = optionsOf(c);
  auto fn = [o](Tensor a, Tensor k) { return a.convolution(k, o); };
  if (!kernelsOn) {
    ConvKernelsOff off;
    return radix::compile(cpu, fn, x, w)(x, w).toVector<double>();
  }
  return radix::compile(cpu, fn, x, w)(x, w).toVector<double>();
}

struct Target {
  const char* cpu;  // "" is the host
  kernels::Isa isa;
};

std::vector<Target> targets() {
  const kernels::Isa host = kernels::hostIsa();
  std::vector<Target> out = {{"", host}};
  if (host >= kernels::Isa::avx512bf16) out.push_back({"skylake-avx512", kernels::Isa::avx512});
  if (host >= kernels::Isa::avx2) out.push_back({"x86-64-v3", kernels::Isa::avx2});
  if (host > kernels::Isa::x86_64) out.push_back({"x86-64", kernels::Isa::x86_64});
  return out;
}

// The extended grid takes bf16 where vdpbf16ps runs it (not at stride 2: its phase planes are
// f32 only), or on AMX where the input channels (a group's) fill the tiles' 32-channel steps at
// least 4/5 (else the tiles take the tabled GEMM).
bool bf16OnGrid(const Case& c, const std::string& targetCpu) {
  if (!targetCpu.empty()) return false;
  if (kernels::hostIsa() == kernels::Isa::avx512bf16) return c.strides.back() != 2;
  const int64_t channels = c.channels / c.groups;
  return kernels::hostIsa() == kernels::Isa::amx && channels >= 32 && (channels + 31) / 32 * 32 * 4 <= channels * 5;
}

void check(const Case& c, DType dtype, int threads, const std::string& targetCpu) {
  SCOPED_TRACE(std::string(c.name) + (dtype == DType::bf16 ? " bf16" : " f32") + " threads " + std::to_string(threads) +
               " target " + (targetCpu.empty() ? "host" : targetCpu));
  radix::CompileOptions options;
  options.cache = false;
  const radix::Platform cpu = radix::Platform::cpu().withOptions(options);
  Dims kdims{c.outputs, c.channels / c.groups};
  kdims.insert(kdims.end(), c.kernel.begin(), c.kernel.end());
  const std::vector<double> x = randomTensor(cpu, dataDims(c, c.channels, c.spatial), dtype, 1).toVector<double>();
  const std::vector<double> w = randomTensor(cpu, kdims, dtype, 2).toVector<double>();
  const std::vector<double> expected = reference(c, x, w);

  const Path path = dtype == DType::bf16 && c.path == Path::rows && !bf16OnGrid(c, targetCpu) ? Path::gemm : c.path;
  const uint64_t before = calls(path);
  const std::vector<double> actual = run(c, dtype, threads, targetCpu, true);
  EXPECT_GT(calls(path), before) << "the conv kernel path " << static_cast<int>(path) << " did not run";
  ASSERT_EQ(actual.size(), expected.size());
  int64_t k = c.channels / c.groups;
  for (int64_t d : c.kernel) k *= d;
  // f32: accumulation error grows with k; bf16: the result is rounded to 8 bits of mantissa.
  const double rounding = dtype == DType::bf16 ? 1.0 / 128 : 0;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double tol = 1e-6 * static_cast<double>(k) + 1e-6 + rounding * std::fabs(expected[i]);
    if (std::fabs(actual[i] - expected[i]) > tol && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": " << actual[i] << " vs " << expected[i] << " (tol " << tol << ")";
  }
}

TEST(ConvKernels, EveryCaseAgainstTheNaiveReference) {
  for (const Case& c : cases()) check(c, DType::f32, 1, "");
}

// A case by name (the tests below run subsets, to keep the compiles few).
const Case& named(const std::string& name) {
  for (const Case& c : cases())
    if (c.name == name) return c;
  throw std::runtime_error("no case " + name);
}

TEST(ConvKernels, Bf16) {
  const uint64_t amx = kernels::convAmxCallCount();
  for (const char* name : {"1d_stride2_pad_dilation", "2d_3x3_s2_batch3", "2d_nhwc_s2", "2d_k360_nchw", "2d_groups2",
                           "2d_3x3_s1_7x7_batch2", "2d_3x3_s1_pad", "2d_s2x1_rows_apart",
                           "2d_1x1_nhwc_batch3", "2d_1x1_s2_downsample", "2d_depthwise", "3d_nhwc", "2d_k1170_nchw",
                           "2d_whole_tiles_nhwc", "2d_k576_x_packed_once", "2d_k567_groups2_x_packed_once",
                           "2d_3x3_s2_wide_rows", "2d_3x3_s2_even_groups2", "2d_amx_grid_batch3",
                           "2d_amx_grid_shared", "1d_amx_grid", "2d_amx_grid_s2_batch2", "2d_3x3_s2_unread_edge_k288"})
    check(named(name), DType::bf16, 1, "");
  // On an AMX host every case above but the 1x1 plain GEMM and the depthwise one ran on the
  // tiles: 13 tabled GEMMs and 8 grids (64, 63 a group, 130, 96 and 32 channels; two at stride 2).
  if (kernels::hostIsa() == kernels::Isa::amx) EXPECT_EQ(kernels::convAmxCallCount(), amx + 21);
}

TEST(ConvKernels, LowerTargets) {
  const std::vector<Target> ts = targets();
  for (size_t t = 1; t < ts.size(); ++t)
    for (const char* name : {"2d_3x3_s2_batch3", "2d_nhwc_s2", "2d_1x1_batch3", "2d_depthwise", "3d", "2d_3x3_s2_wide_rows",
                             "2d_3x3_s1_7x7_batch2", "2d_k360_nchw", "2d_s2x1_rows_apart", "2d_7x7_s2_stem",
                             "2d_3x3_s2_even_groups2"})
      check(named(name), DType::f32, 1, ts[t].cpu);
  // bf16 there: the sums are rounded into C without vcvtneps2bf16 (kConvOutBf16's portable path).
  for (size_t t = 1; t < ts.size(); ++t)
    for (const char* name : {"2d_3x3_s1_7x7_batch2", "2d_1x1_batch3"}) check(named(name), DType::bf16, 1, ts[t].cpu);
}

// Big enough (over 1 MFLOP) for the threads to split the work.
TEST(ConvKernels, TwoThreads) {
  const std::vector<Case> big = {
      {"split_nchw", 3, 16, 24, {20, 19}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
      {"split_nhwc_groups", 1, 16, 32, {21, 20}, {3, 3}, {2, 1}, {1, 1}, {{1, 1}, {1, 1}}, 2, true, Path::gemm},
      {"split_depthwise", 3, 32, 32, {30, 30}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 32, false, Path::direct},
      // X packed once by both threads: 3 groups x 2 row panels, each thread's panels across a group boundary.
      {"split_x_packed_once_groups3", 1, 192, 30, {14, 13}, {3, 3}, {1, 1}, {1, 1}, {{1, 1}, {1, 1}}, 3, false, Path::rows},
      // Both threads copy phase planes (row pairs split across images), then run the grid.
      {"split_stride2_phases", 3, 16, 24, {27, 30}, {3, 3}, {2, 2}, {1, 1}, {{1, 1}, {1, 1}}, 1, false, Path::rows},
  };
  for (const Case& c : big) check(c, DType::f32, 2, "");
  // bf16 on two threads: AMX's grid with an image per thread, then one image shared.
  for (const char* name : {"2d_amx_grid_batch3", "2d_amx_grid_shared", "2d_amx_grid_s2_batch2"})
    check(named(name), DType::bf16, 2, "");
}

// The generic loops (the reference lowering) and the kernels agree, and the switch works.
TEST(ConvKernels, GenericLoweringAgrees) {
  for (const char* name : {"1d_nhwc", "2d_3x3_s2_batch3", "2d_nhwc_dilation", "2d_groups3_nhwc", "2d_1x1_s2_downsample",
                           "2d_depthwise_multiplier2", "3d"}) {
    const Case& c = named(name);
    SCOPED_TRACE(c.name);
    uint64_t total = 0;
    for (int p = 0; p < kernels::kConvPathCount; ++p) total += kernels::convCallCount(Path(p));
    const std::vector<double> loops = run(c, DType::f32, 1, "", false);
    uint64_t after = 0;
    for (int p = 0; p < kernels::kConvPathCount; ++p) after += kernels::convCallCount(Path(p));
    EXPECT_EQ(after, total) << "RADIX_CONV_KERNELS=0 still called the conv kernel";
    const std::vector<double> fast = run(c, DType::f32, 1, "", true);
    ASSERT_EQ(loops.size(), fast.size());
    for (size_t i = 0; i < fast.size(); ++i) ASSERT_NEAR(fast[i], loops[i], 1e-4) << "element " << i;
  }
}

// Integer convolutions keep the generic loops (the kernels are float only).
TEST(ConvKernels, IntegersKeepTheGenericPath) {
  radix::CompileOptions options;
  options.cache = false;
  const radix::Platform cpu = radix::Platform::cpu().withOptions(options);
  Tensor x = Tensor::fromValues(cpu, Shape({1, 2, 5}, DType::i32), std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor w = Tensor::fromValues(cpu, Shape({1, 2, 2}, DType::i32), std::vector<int32_t>{1, -1, 2, 1});
  uint64_t total = 0;
  for (int p = 0; p < kernels::kConvPathCount; ++p) total += kernels::convCallCount(Path(p));
  Tensor y = radix::compile(cpu, [](Tensor a, Tensor k) { return a.conv1d(k, {}); }, x, w)(x, w);
  uint64_t after = 0;
  for (int p = 0; p < kernels::kConvPathCount; ++p) after += kernels::convCallCount(Path(p));
  EXPECT_EQ(after, total);
  // y[s] = x0[s] - x0[s+1] + 2 x1[s] + x1[s+1] = 18 + 3s
  EXPECT_EQ(y.toVector<int32_t>(), (std::vector<int32_t>{18, 21, 24, 27}));
}

struct PoolCase {
  const char* name;
  Dims dims;
  std::vector<int64_t> axes;
  Dims window, strides;
  std::vector<std::pair<int64_t, int64_t>> padding;
  bool isMax;
};

// Max (padding -inf) or mean (padding counted as 0) over each window, in double.
std::vector<double> poolReference(const PoolCase& c, const std::vector<double>& x) {
  Dims out = c.dims;
  for (size_t p = 0; p < c.axes.size(); ++p) {
    const int64_t a = c.axes[p], lo = c.padding.empty() ? 0 : c.padding[p].first, hi = c.padding.empty() ? 0 : c.padding[p].second;
    out[a] = (lo + c.dims[a] + hi - c.window[p]) / c.strides[p] + 1;
  }
  double count = 1;
  for (int64_t w : c.window) count *= static_cast<double>(w);
  std::vector<double> y;
  Dims o(out.size(), 0);
  do {
    double acc = c.isMax ? -INFINITY : 0;
    Dims k(c.window.size(), 0);
    do {
      Dims i = o;
      bool inside = true;
      for (size_t p = 0; p < c.axes.size(); ++p) {
        const int64_t a = c.axes[p], lo = c.padding.empty() ? 0 : c.padding[p].first;
        i[a] = o[a] * c.strides[p] + k[p] - lo;
        inside = inside && i[a] >= 0 && i[a] < c.dims[a];
      }
      if (!inside) continue;
      int64_t off = 0;
      for (size_t d = 0; d < i.size(); ++d) off = off * c.dims[d] + i[d];
      acc = c.isMax ? std::max(acc, x[static_cast<size_t>(off)]) : acc + x[static_cast<size_t>(off)];
    } while (step(k, c.window));
    y.push_back(c.isMax ? acc : acc / count);
  } while (step(o, out));
  return y;
}

// Pooling kernels are opt-in (RADIX_POOL_KERNELS=1).
struct PoolKernelsOn {
  PoolKernelsOn() { setenv("RADIX_POOL_KERNELS", "1", 1); }
  ~PoolKernelsOn() { unsetenv("RADIX_POOL_KERNELS"); }
};

TEST(ConvKernels, Pooling) {
  PoolKernelsOn on;
  const std::vector<PoolCase> cases = {
      {"max_3x3_s2_pad_nchw", {3, 5, 13, 11}, {2, 3}, {3, 3}, {2, 2}, {{1, 1}, {1, 1}}, true},
      {"max_2x2_nhwc", {1, 9, 10, 7}, {1, 2}, {2, 2}, {2, 2}, {}, true},
      {"avg_3x3_s1_pad", {3, 4, 9, 8}, {2, 3}, {3, 3}, {1, 1}, {{1, 1}, {1, 1}}, false},
      {"avg_1d_window4_stride3", {2, 129}, {1}, {4}, {3}, {{1, 0}}, false},
      {"max_3d", {1, 2, 5, 6, 7}, {2, 3, 4}, {2, 3, 2}, {1, 2, 2}, {{0, 1}, {1, 1}, {0, 0}}, true},
  };
  radix::CompileOptions options;
  options.cache = false;
  const radix::Platform cpu = radix::Platform::cpu().withOptions(options);
  for (const DType dtype : {DType::f32, DType::bf16})
    for (const PoolCase& c : cases) {
      if (dtype == DType::bf16 && c.name != std::string("avg_3x3_s1_pad") && c.name != std::string("max_2x2_nhwc")) continue;
      // max pooling of bf16 stays bf16 (no f32 accumulator): the generic loops run it.
      const bool kernel = dtype == DType::f32 || !c.isMax;
      SCOPED_TRACE(std::string(c.name) + (dtype == DType::bf16 ? " bf16" : " f32"));
      Tensor x = randomTensor(cpu, c.dims, dtype, 3);
      Tensor::PoolOptions o;
      for (int64_t a : c.axes) o.axes.push_back(a);
      o.window = c.window;
      o.strides = c.strides;
      o.padding = c.padding;
      const bool isMax = c.isMax;
      auto fn = [o, isMax](Tensor t) { return isMax ? t.maxPool(o) : t.avgPool(o); };
      const std::vector<double> expected = poolReference(c, x.toVector<double>());
      const uint64_t before = calls(Path::pool);
      const std::vector<double> actual = radix::compile(cpu, fn, x)(x).toVector<double>();
      if (kernel)
        EXPECT_GT(calls(Path::pool), before) << "the pooling kernel did not run";
      else
        EXPECT_EQ(calls(Path::pool), before);
      std::vector<double> loops;
      {
        ConvKernelsOff off;
        loops = radix::compile(cpu, fn, x)(x).toVector<double>();
      }
      ASSERT_EQ(actual.size(), expected.size());
      ASSERT_EQ(loops.size(), expected.size());
      const double rounding = dtype == DType::bf16 ? 1.0 / 128 : 0;
      for (size_t i = 0; i < actual.size(); ++i) {
        ASSERT_NEAR(actual[i], expected[i], 1e-5 + rounding * std::fabs(expected[i])) << "element " << i;
        ASSERT_NEAR(actual[i], loops[i], 1e-5 + rounding * std::fabs(expected[i])) << "element " << i;
      }
    }
}

// Max pooling propagates NaN, as the generic lowering (arith.maximumf) does.
TEST(ConvKernels, MaxPoolPropagatesNan) {
  PoolKernelsOn on;
  radix::CompileOptions options;
  options.cache = false;
  const radix::Platform cpu = radix::Platform::cpu().withOptions(options);
  std::vector<float> v(16, 1.0f);
  v[5] = NAN;
  Tensor x = Tensor::fromValues(cpu, Shape({1, 1, 4, 4}, DType::f32), v);
  Tensor::PoolOptions o;
  o.axes = {2, 3};
  o.window = {2, 2};
  const uint64_t before = calls(Path::pool);
  const std::vector<float> y = radix::compile(cpu, [o](Tensor t) { return t.maxPool(o); }, x)(x).toVector<float>();
  EXPECT_GT(calls(Path::pool), before);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 1.0f);
}

// A bad descriptor (a cached object from another build) is refused without touching memory.
TEST(ConvKernels, BadDescriptorIsIgnored) {
  const int64_t desc[] = {99, 0, 0, 0, 0};
  float c = 7;
  radix_kernel_conv(0, 0, 0, 0, reinterpret_cast<int64_t>(&c), 0, reinterpret_cast<int64_t>(desc), 1, 0);
  EXPECT_EQ(c, 7);
  // A bf16 C only under its own version (which a runtime from before the flag refuses), and
  // only where C is written whole: one 1x1 product of 2 x 3 either way, refused.
  const float a = 2, b = 3;
  for (const int64_t version : {kernels::kConvDescVersion, kernels::kConvDescVersionOutBf16})
    for (const int64_t flags : {int64_t(0), kernels::kConvOutBf16, kernels::kConvOverwrite | kernels::kConvOutBf16}) {
      if ((version == kernels::kConvDescVersionOutBf16) == ((flags & kernels::kConvOutBf16) != 0) &&
          (flags & kernels::kConvOverwrite) != 0)
        continue;  // the valid pairings
      if (version == kernels::kConvDescVersion && flags == 0) continue;
      const int64_t one[] = {version, flags, 0, 0, 0, 1, 0, 0, 0};
      radix_kernel_conv(reinterpret_cast<int64_t>(&a), 0, reinterpret_cast<int64_t>(&b), 0, reinterpret_cast<int64_t>(&c),
                        0, reinterpret_cast<int64_t>(one), 1, 0);
      EXPECT_EQ(c, 7) << "version " << version << " flags " << flags;
    }
  // The same product under a valid descriptor runs: C += 2 x 3.
  const int64_t valid[] = {kernels::kConvDescVersion, 0, 0, 0, 0, 1, 0, 0, 0};
  radix_kernel_conv(reinterpret_cast<int64_t>(&a), 0, reinterpret_cast<int64_t>(&b), 0, reinterpret_cast<int64_t>(&c), 0,
                    reinterpret_cast<int64_t>(valid), 1, 0);
  EXPECT_EQ(c, 13);
  c = 7;
  const int64_t tooMany[] = {kernels::kConvDescVersion, 0, 99, 0, 0};
  radix_kernel_conv(0, 0, 0, 0, reinterpret_cast<int64_t>(&c), 0, reinterpret_cast<int64_t>(tooMany), 1, 0);
  EXPECT_EQ(c, 7);
  const int64_t badOp[] = {kernels::kConvDescVersion, 0, 7, 0, 0};
  radix_kernel_pool(0, 0, reinterpret_cast<int64_t>(&c), 0, reinterpret_cast<int64_t>(badOp), 1, 0);
  EXPECT_EQ(c, 7);
}

// A bf16 convolution's rounding of its f32 sums folds into the kernel call (kConvOutBf16): AMX's
// grid rounds each tile as it stores it, the other paths round an f32 scratch; followed by more
// elementwise work (relu), the rounding stays in that op. Both agree with the loops.
TEST(ConvKernels, Bf16RoundingFoldsIntoTheCall) {
  Tensor::ConvOptions o;
  o.padding = {{1, 1}, {1, 1}};
  // 64 channels on a 9 x 10 grid (AMX's grid on AMX hosts); 6 channels (the tabled GEMM).
  struct Shape4 {
    Dims x, w;
  };
  for (const Shape4& s : {Shape4{{2, 64, 9, 10}, {40, 64, 3, 3}}, Shape4{{3, 6, 9, 10}, {10, 6, 3, 3}}}) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE(std::to_string(s.x[1]) + " channels" + (relu ? " + relu" : ""));
      auto fn = [o, relu](Tensor a, Tensor k) {
        Tensor y = a.conv2d(k, o);
        return relu ? y.relu() : y;
      };
      const std::string dir = ::testing::TempDir() + "radix_conv_round";
      std::filesystem::remove_all(dir);
      const radix::Platform cpu =
          radix::Platform::cpu().withOptions(radix::iotest::passDumpOptions(dir, "radix-lower-rows"));
      Tensor x = randomTensor(cpu, s.x, DType::bf16, 5), w = randomTensor(cpu, s.w, DType::bf16, 6);
      const uint64_t before = calls(Path::gemm) + calls(Path::rows);
      const std::vector<double> got = radix::compile(cpu, fn, x, w)(x, w).toVector<double>();
      EXPECT_GT(calls(Path::gemm) + calls(Path::rows), before);
      const std::string text = radix::iotest::passDump(dir, "radix-lower-rows", "radix_kernel_conv");
      ASSERT_FALSE(text.empty());
      if (!relu)
        EXPECT_EQ(text.find("arith.truncf"), std::string::npos) << "the rounding did not fold into the call:\n" << text;
      else
        EXPECT_NE(text.find("arith.truncf"), std::string::npos) << text;
      const std::vector<double> want = throughLoops(fn, x, w);
      ASSERT_EQ(got.size(), want.size());
      // Both round the same f32 sums, summed in different orders: one bf16 step apart at most.
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], std::fabs(want[i]) / 128 + 1e-3) << i;
      std::filesystem::remove_all(dir);
    }
  }
}

// Two padded convolutions of one shape, each reading an elementwise result: the producers write
// into their zero frames' interiors, and the frames keep a fill each (CSE merged them into one,
// which bufferization then copied whole for the first): no memref.copy is left; the numbers agree
// with the generic lowering.
TEST(ConvKernels, PaddedInputsAreWrittenIntoTheirFrames) {
  const std::string dir = ::testing::TempDir() + "radix_conv_frames";
  const radix::Platform cpu =
      radix::Platform::cpu().withOptions(radix::iotest::passDumpOptions(dir, "convert-bufferization-to-memref"));
  Tensor x = randomTensor(cpu, {2, 6, 9, 11}, DType::f32, 1);
  Tensor w1 = randomTensor(cpu, {6, 6, 3, 3}, DType::f32, 2), w2 = randomTensor(cpu, {6, 6, 3, 3}, DType::f32, 3);
  Tensor::ConvOptions o;
  o.padding = {{1, 1}, {1, 1}};
  auto fn = [o](Tensor a, Tensor k1, Tensor k2) { return a.relu().conv2d(k1, o).relu().conv2d(k2, o); };
  const std::vector<double> got = radix::compile(cpu, fn, x, w1, w2)(x, w1, w2).toVector<double>();
  const std::string text = radix::iotest::passDump(dir, "convert-bufferization-to-memref", "func.func");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find("memref.copy"), std::string::npos) << text;
  const std::vector<double> want = throughLoops(fn, x, w1, w2);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
  std::filesystem::remove_all(dir);
}

}  // namespace
