// Convolution, pooling and resizing against naive references.
#include "ops_testing.h"

namespace opstest {
namespace {

using Conv = Tensor::ConvOptions;
using Pool = Tensor::PoolOptions;
using Mode = Tensor::ResizeMode;

/// Where the axes of a convolution operand are: {batch or output, feature or input, spatial...}.
using Layout = std::vector<int>;

struct ConvParams {
  Layout in = {}, ker = {};  // empty: {0, 1, 2, ...}
  Dims strides = {}, lhsDilation = {}, rhsDilation = {};
  std::vector<std::pair<int64_t, int64_t>> padding = {};
  int64_t groups = 1;
};

Layout orDefault(const Layout& l, size_t rank) {
  if (!l.empty()) return l;
  Layout r(rank);
  for (size_t i = 0; i < rank; ++i) r[i] = static_cast<int>(i);
  return r;
}

/// Cross-correlation of in[0] by in[1] straight from the definition: each output position reads
/// the input at (out * stride + k * rhsDilation - low) / lhsDilation when that is a whole index.
Ref convRef(ConvParams p) {
  return [=](const std::vector<Host>& h) {
    const Host &x = h[0], &w = h[1];
    const size_t rank = x.dims.size(), ns = rank - 2;
    const Layout in = orDefault(p.in, rank), ker = orDefault(p.ker, rank);
    auto at = [&](const Dims& v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[i]; };
    Dims outDims = x.dims;
    const int64_t outputs = w.dims[ker[0]], groupFeatures = w.dims[ker[1]];
    outDims[in[1]] = outputs;
    Dims kDims;
    for (size_t i = 0; i < ns; ++i) {
      const int64_t n = x.dims[in[2 + i]], k = w.dims[ker[2 + i]];
      const int64_t lo = p.padding.empty() ? 0 : p.padding[i].first, hi = p.padding.empty() ? 0 : p.padding[i].second;
      const int64_t padded = lo + (n - 1) * at(p.lhsDilation, i, 1) + 1 + hi, window = (k - 1) * at(p.rhsDilation, i, 1) + 1;
      outDims[in[2 + i]] = (padded - window) / at(p.strides, i, 1) + 1;
      kDims.push_back(k);
    }
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      const int64_t f = o[in[1]], g = f / (outputs / p.groups);
      double s = 0;
      for (int64_t ci = 0; ci < groupFeatures; ++ci)
        forEachIndex(kDims, [&](const Dims& k) {
          Dims xi(rank), wi(rank);
          xi[in[0]] = o[in[0]];
          xi[in[1]] = g * groupFeatures + ci;
          wi[ker[0]] = f;
          wi[ker[1]] = ci;
          for (size_t i = 0; i < ns; ++i) {
            const int64_t lo = p.padding.empty() ? 0 : p.padding[i].first, ld = at(p.lhsDilation, i, 1);
            const int64_t q = o[in[2 + i]] * at(p.strides, i, 1) + k[i] * at(p.rhsDilation, i, 1) - lo;
            if (q < 0 || q % ld != 0 || q / ld >= x.dims[in[2 + i]]) return;
            xi[in[2 + i]] = q / ld;
            wi[ker[2 + i]] = k[i];
          }
          s += x.v[offsetOf(x.dims, xi)] * w.v[offsetOf(w.dims, wi)];
        });
      out.push_back(s);
    });
    return out;
  };
}

/// Max or mean over windows; padding is -inf for max and 0 (counted) for the mean.
Ref poolRef(std::vector<int> axes, Dims window, Dims strides, Dims dilation, std::vector<std::pair<int64_t, int64_t>> padding, bool isMax) {
  return [=](const std::vector<Host>& h) {
    const Host& x = h[0];
    Dims outDims = x.dims;
    auto stride = [&](size_t p) { return strides.empty() ? window[p] : strides[p]; };
    auto dil = [&](size_t p) { return dilation.empty() ? 1 : dilation[p]; };
    auto low = [&](size_t p) { return padding.empty() ? 0 : padding[p].first; };
    auto high = [&](size_t p) { return padding.empty() ? 0 : padding[p].second; };
    double count = 1;
    for (size_t p = 0; p < axes.size(); ++p) {
      outDims[axes[p]] = (low(p) + x.dims[axes[p]] + high(p) - ((window[p] - 1) * dil(p) + 1)) / stride(p) + 1;
      count *= window[p];
    }
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      double acc = isMax ? -INFINITY : 0;
      forEachIndex(window, [&](const Dims& k) {
        Dims i = o;
        for (size_t p = 0; p < axes.size(); ++p) {
          const int64_t q = o[axes[p]] * stride(p) + k[p] * dil(p) - low(p);
          if (q < 0 || q >= x.dims[axes[p]]) return;
          i[axes[p]] = q;
        }
        const double v = x.v[offsetOf(x.dims, i)];
        acc = isMax ? std::max(acc, v) : acc + v;
      });
      out.push_back(isMax ? acc : acc / count);
    });
    return out;
  };
}

/// Nearest: floor(j * in / out). Linear: half-pixel centers, clamped, separable over the axes.
Ref resizeRef(std::vector<int> axes, Dims sizes, bool linear) {
  return [=](const std::vector<Host>& h) {
    const Host& x = h[0];
    Dims outDims = x.dims;
    for (size_t k = 0; k < axes.size(); ++k) outDims[axes[k]] = sizes[k];
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      if (!linear) {
        Dims i = o;
        for (int a : axes) i[a] = o[a] * x.dims[a] / outDims[a];
        out.push_back(x.v[offsetOf(x.dims, i)]);
        return;
      }
      std::vector<int64_t> lower, upper;
      std::vector<double> weight;
      for (int a : axes) {
        const double src = std::max((o[a] + 0.5) * x.dims[a] / outDims[a] - 0.5, 0.0);
        const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), x.dims[a] - 1);
        lower.push_back(i0);
        upper.push_back(std::min<int64_t>(i0 + 1, x.dims[a] - 1));
        weight.push_back(src - i0);
      }
      double s = 0;
      for (size_t corner = 0; corner < (size_t{1} << axes.size()); ++corner) {
        Dims i = o;
        double wgt = 1;
        for (size_t k = 0; k < axes.size(); ++k) {
          const bool up = (corner >> k) & 1;
          i[axes[k]] = up ? upper[k] : lower[k];
          wgt *= up ? weight[k] : 1 - weight[k];
        }
        s += wgt * x.v[offsetOf(x.dims, i)];
      }
      out.push_back(s);
    });
    return out;
  };
}

Op convOp(Conv o) { return [=](const Ts& x) { return x[0].convolution(x[1], o); }; }
Op conv1dOp(Conv o) { return [=](const Ts& x) { return x[0].conv1d(x[1], o); }; }
Op conv2dOp(Conv o) { return [=](const Ts& x) { return x[0].conv2d(x[1], o); }; }
Op maxPoolOp(Pool o) { return [=](const Ts& x) { return x[0].maxPool(o); }; }
Op avgPoolOp(Pool o) { return [=](const Ts& x) { return x[0].avgPool(o); }; }
Op resizeOp(std::vector<std::pair<radix::Axis, int64_t>> s, Mode m) { return [=](const Ts& x) { return x[0].resize(s, m); }; }
Op upsampleOp(std::vector<std::pair<radix::Axis, int64_t>> f, Mode m) { return [=](const Ts& x) { return x[0].upsample(f, m); }; }

std::vector<Case> convolutionCases() {
  const auto F = kFloats;
  const DType i32 = DType::i32;
  return {
      {"conv1d_plain", {sh({2, 3, 17}), sh({5, 3, 3})}, conv1dOp({}), convRef({}), sh({2, 5, 15}), F},
      {"conv1d_stride2_padding", {sh({1, 4, 17}), sh({3, 4, 4})}, conv1dOp({.strides = {2}, .padding = {{1, 2}}}), convRef({.strides = {2}, .padding = {{1, 2}}}), sh({1, 3, 9}), F},
      {"conv1d_kernel_dilation", {sh({2, 3, 17}), sh({2, 3, 3})}, conv1dOp({.rhsDilation = {3}}), convRef({.rhsDilation = {3}}), sh({2, 2, 11}), F},
      {"conv1d_input_dilation", {sh({1, 2, 7}), sh({3, 2, 3})}, conv1dOp({.padding = {{2, 2}}, .lhsDilation = {2}}), convRef({.lhsDilation = {2}, .padding = {{2, 2}}}), sh({1, 3, 15}), F},
      {"conv1d_groups", {sh({2, 6, 9}), sh({4, 3, 3})}, conv1dOp({.featureGroups = 2}), convRef({.groups = 2}), sh({2, 4, 7}), F},
      {"conv1d_depthwise", {sh({1, 3, 9}), sh({6, 1, 3})}, conv1dOp({.featureGroups = 3}), convRef({.groups = 3}), sh({1, 6, 7}), F},
      {"conv1d_ones", {sh({1, 1, 1}), sh({1, 1, 1})}, conv1dOp({}), convRef({}), sh({1, 1, 1}), F},
      {"conv1d_i32", {sh({1, 2, 7}, i32), sh({3, 2, 3}, i32)}, conv1dOp({.strides = {2}}), convRef({.strides = {2}}), sh({1, 3, 3}, i32), {}, -4, 4},
      {"conv2d_nchw", {sh({2, 3, 7, 9}), sh({4, 3, 3, 3})}, conv2dOp({}), convRef({}), sh({2, 4, 5, 7}), F},
      {"conv2d_stride2_padding", {sh({2, 3, 7, 9}), sh({4, 3, 3, 3})}, conv2dOp({.strides = {2, 2}, .padding = {{1, 1}, {1, 1}}}), convRef({.strides = {2, 2}, .padding = {{1, 1}, {1, 1}}}), sh({2, 4, 4, 5}), F},
      // NHWC input, OIHW kernel, chosen by tags; the result keeps the input's layout and tags.
      {"conv2d_nhwc_tags", {sh({1, 7, 5, 3}, {"b", "h", "w", "c"}), sh({4, 3, 3, 2}, {"o", "i", "kh", "kw"})},
       conv2dOp({.inputBatch = "b", .inputFeature = "c", .kernelOutput = "o", .kernelInput = "i"}),
       convRef({.in = {0, 3, 1, 2}}), sh({1, 5, 4, 4}, {"b", "h", "w", "c"}), F},
      // HWIO kernel with explicit spatial axes.
      {"conv2d_hwio_kernel", {sh({2, 3, 6, 5}, {"b", "c", "h", "w"}), sh({3, 2, 3, 4}, {"kh", "kw", "i", "o"})},
       conv2dOp({.inputBatch = "b", .inputFeature = "c", .inputSpatial = {"h", "w"}, .kernelOutput = "o", .kernelInput = "i", .kernelSpatial = {"kh", "kw"}}),
       convRef({.ker = {3, 2, 0, 1}}), sh({2, 4, 4, 4}, {"b", "c", "h", "w"}), F},
      {"conv2d_everything", {sh({1, 4, 9, 8}), sh({6, 2, 3, 2})},
       conv2dOp({.strides = {2, 1}, .padding = {{0, 1}, {2, 0}}, .lhsDilation = {1, 1}, .rhsDilation = {1, 2}, .featureGroups = 2}),
       convRef({.strides = {2, 1}, .rhsDilation = {1, 2}, .padding = {{0, 1}, {2, 0}}, .groups = 2}), sh({1, 6, 4, 8}), F},
      {"conv2d_input_dilation_stride", {sh({1, 2, 5, 4}), sh({3, 2, 3, 3})},
       conv2dOp({.strides = {2, 1}, .padding = {{2, 2}, {1, 1}}, .lhsDilation = {2, 3}}),
       convRef({.strides = {2, 1}, .lhsDilation = {2, 3}, .padding = {{2, 2}, {1, 1}}}), sh({1, 3, 6, 10}), F},
      {"convolution_3d", {sh({1, 2, 3, 4, 5}), sh({2, 2, 2, 2, 2})}, convOp({}), convRef({}), sh({1, 2, 2, 3, 4}), F},
  };
}

std::vector<Case> poolingCases() {
  const auto F = kFloats;
  const DType i32 = DType::i32;
  return {
      {"maxPool_2x2", {sh({1, 3, 8, 9})}, maxPoolOp({.axes = {2, 3}, .window = {2, 2}}), poolRef({2, 3}, {2, 2}, {}, {}, {}, true), sh({1, 3, 4, 4}), F},
      // All negative: padding that counted as 0 would win.
      {"maxPool_stride1_padding", {sh({2, 17})}, maxPoolOp({.axes = {1}, .window = {3}, .strides = {1}, .padding = {{1, 1}}}), poolRef({1}, {3}, {1}, {}, {{1, 1}}, true), sh({2, 17}), F, -5, -1},
      {"maxPool_tags_dilation", {sh({3, 9, 7}, {"c", "h", "w"})}, maxPoolOp({.axes = {"h", "w"}, .window = {3, 2}, .strides = {2, 2}, .dilation = {2, 1}}), poolRef({1, 2}, {3, 2}, {2, 2}, {2, 1}, {}, true), sh({3, 3, 3}, {"c", "h", "w"}), F},
      {"maxPool_i32", {sh({7, 3}, i32)}, maxPoolOp({.axes = {0}, .window = {3}, .strides = {2}, .padding = {{1, 1}}}), poolRef({0}, {3}, {2}, {}, {{1, 1}}, true), sh({4, 3}, i32), {}, -9, -1},
      {"maxPool_window1", {sh({1})}, maxPoolOp({.axes = {0}, .window = {1}}), poolRef({0}, {1}, {}, {}, {}, true), sh({1}), F},
      {"avgPool_17", {sh({17})}, avgPoolOp({.axes = {0}, .window = {3}}), poolRef({0}, {3}, {}, {}, {}, false), sh({5}), F},
      {"avgPool_2d_padding", {sh({1, 2, 9, 9}, {"b", "c", "h", "w"})}, avgPoolOp({.axes = {"h", "w"}, .window = {3, 3}, .strides = {2, 2}, .padding = {{1, 1}, {1, 1}}}), poolRef({2, 3}, {3, 3}, {2, 2}, {}, {{1, 1}, {1, 1}}, false), sh({1, 2, 5, 5}, {"b", "c", "h", "w"}), F},
      {"avgPool_129", {sh({129, 2})}, avgPoolOp({.axes = {-2}, .window = {129}}), poolRef({0}, {129}, {}, {}, {}, false), sh({1, 2}), F},
  };
}

std::vector<Case> resizeCases() {
  const auto F = kFloats;
  const DType i32 = DType::i32;
  return {
      {"resize_nearest_up", {sh({1, 2, 3, 4})}, resizeOp({{2, 6}, {3, 8}}, Mode::nearest), resizeRef({2, 3}, {6, 8}, false), sh({1, 2, 6, 8}), F},
      {"resize_nearest_down_odd", {sh({17, 3})}, resizeOp({{0, 5}}, Mode::nearest), resizeRef({0}, {5}, false), sh({5, 3}), F},
      {"resize_nearest_i32", {sh({3, 7}, i32)}, resizeOp({{1, 129}}, Mode::nearest), resizeRef({1}, {129}, false), sh({3, 129}, i32), {}, -9, 9},
      {"resize_bilinear_tags", {sh({1, 3, 5}, {"b", "h", "w"})}, resizeOp({{"h", 6}, {"w", 2}}, Mode::linear), resizeRef({1, 2}, {6, 2}, true), sh({1, 6, 2}, {"b", "h", "w"}), F},
      {"resize_linear_up", {sh({7})}, resizeOp({{0, 17}}, Mode::linear), resizeRef({0}, {17}, true), sh({17}), F},
      {"resize_linear_to_1", {sh({17, 2})}, resizeOp({{0, 1}}, Mode::linear), resizeRef({0}, {1}, true), sh({1, 2}), F},
      {"upsample_nearest", {sh({2, 3, 4}, {"c", "h", "w"})}, upsampleOp({{"h", 2}, {"w", 3}}, Mode::nearest), resizeRef({1, 2}, {6, 12}, false), sh({2, 6, 12}, {"c", "h", "w"}), F},
      {"upsample_linear", {sh({2, 3})}, upsampleOp({{1, 3}}, Mode::linear), resizeRef({1}, {9}, true), sh({2, 9}), F},
  };
}

std::vector<ErrorCase> errorCases() {
  [[maybe_unused]] const DType f16 = DType::f16, i32 = DType::i32, b = DType::bool_;
  return {
      {"conv_dtype", {sh({1, 2, 5}), sh({1, 2, 3}, f16)}, conv1dOp({}), "[conv1d]", "dtypes differ: input {1,2,5}:f32 and kernel {1,2,3}:f16"},
      {"conv_bool", {sh({1, 2, 5}, b), sh({1, 2, 3}, b)}, conv1dOp({}), "[conv1d]", "{1,2,5}:bool"},
      {"conv1d_rank", {sh({1, 2, 5, 5}), sh({1, 2, 3, 3})}, conv1dOp({}), "[conv1d]", "needs rank-3 input and kernel, got input {1,2,5,5}:f32"},
      {"conv2d_rank", {sh({1, 2, 5}), sh({1, 2, 3})}, conv2dOp({}), "[conv2d]", "needs rank-4 input and kernel, got input {1,2,5}:f32 and kernel {1,2,3}:f32"},
      {"convolution_ranks", {sh({1, 2, 5}), sh({1, 2, 3, 3})}, convOp({}), "[convolution]", "equal ranks >= 3"},
      {"conv_kernel_features", {sh({1, 4, 5}), sh({2, 3, 3})}, conv1dOp({}), "[conv1d]", "kernel input size 3 must be input features 4 / featureGroups 1: input {1,4,5}:f32 and kernel {2,3,3}:f32"},
      {"conv_groups_outputs", {sh({1, 4, 5}), sh({3, 2, 3})}, conv1dOp({.featureGroups = 2}), "[conv1d]", "kernel output size 3 is not divisible by featureGroups 2"},
      {"conv_groups_zero", {sh({1, 4, 5}), sh({2, 4, 3})}, conv1dOp({.featureGroups = 0}), "[conv1d]", "featureGroups 0 is below 1"},
      {"conv_window", {sh({1, 2, 3}), sh({1, 2, 5})}, conv1dOp({}), "[conv1d]", "the kernel window (5) along spatial axis 0 does not fit the padded input (3)"},
      {"conv_window_dilated", {sh({1, 2, 5}), sh({1, 2, 3})}, conv1dOp({.rhsDilation = {3}}), "[conv1d]", "the kernel window (7)"},
      {"conv_strides_count", {sh({1, 2, 5, 5}), sh({1, 2, 3, 3})}, conv2dOp({.strides = {2}}), "[conv2d]", "strides has 1 entries for 2 axes: input {1,2,5,5}:f32"},
      {"conv_stride_zero", {sh({1, 2, 5}), sh({1, 2, 3})}, conv1dOp({.strides = {0}}), "[conv1d]", "strides 0 is below 1"},
      {"conv_negative_padding", {sh({1, 2, 5}), sh({1, 2, 3})}, conv1dOp({.padding = {{-1, 0}}}), "[conv1d]", "padding (-1, 0) is negative"},
      {"conv_layout_same_axis", {sh({1, 2, 5}), sh({1, 2, 3})}, conv1dOp({.inputFeature = 0}), "[conv1d]", "input batch and feature axes are both axis 0 of {1,2,5}:f32"},
      {"conv_layout_twice", {sh({1, 2, 5, 5}), sh({1, 2, 3, 3})}, conv2dOp({.inputSpatial = {2, 2}}), "[conv2d]", "input axis 2 appears twice in the layout of {1,2,5,5}:f32"},
      {"conv_layout_tag", {sh({1, 5, 2}, {"b", "w", "c"}), sh({1, 2, 3})}, conv1dOp({.inputBatch = "b", .inputFeature = "x"}), "[conv1d]", "no axis tagged \"x\" in {b=1,w=5,c=2}:f32"},
      {"maxPool_no_axes", {sh({4, 4})}, maxPoolOp({}), "[maxPool]", "no axes to pool in {4,4}:f32"},
      {"maxPool_window_count", {sh({4, 4})}, maxPoolOp({.axes = {0, 1}, .window = {2}}), "[maxPool]", "window has 1 sizes for 2 pooled axes of {4,4}:f32"},
      {"maxPool_window_big", {sh({4, 3})}, maxPoolOp({.axes = {1}, .window = {4}}), "[maxPool]", "the window (4) along axis 1 does not fit the padded input (3): {4,3}:f32"},
      {"maxPool_twice", {sh({4, 4}, {"h", "w"})}, maxPoolOp({.axes = {"h", 0}, .window = {2, 2}}), "[maxPool]", "axis 0 is pooled twice in {h=4,w=4}:f32"},
      {"maxPool_bool", {sh({4}, b)}, maxPoolOp({.axes = {0}, .window = {2}}), "[maxPool]", "{4}:bool"},
      {"avgPool_integer", {sh({4}, i32)}, avgPoolOp({.axes = {0}, .window = {2}}), "[avgPool]", "averages need a float tensor, got {4}:i32"},
      {"resize_linear_integer", {sh({4}, i32)}, resizeOp({{0, 8}}, Mode::linear), "[resize]", "linear resizing needs a float tensor, got {4}:i32"},
      {"resize_size", {sh({4, 3})}, resizeOp({{1, 0}}, Mode::nearest), "[resize]", "new size 0 of axis 1 is below 1 for {4,3}:f32"},
      {"resize_axis", {sh({4, 3})}, resizeOp({{2, 5}}, Mode::nearest), "[resize]", "axis 2 out of range for {4,3}:f32"},
      {"upsample_factor", {sh({4, 3})}, upsampleOp({{0, 0}}, Mode::nearest), "[upsample]", "factor 0 of axis 0 is below 1 for {4,3}:f32"},
  };
}

}  // namespace

RADIX_OPS_CASES("convolution", convolutionCases);
RADIX_OPS_CASES("pooling", poolingCases);
RADIX_OPS_CASES("resize", resizeCases);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest
