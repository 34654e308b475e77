// Shape ops (broadcasts, reshapes, axes, pad, reverse, slices, concatenate, repeat, split, roll)
// against naive references.
#include "ops_testing.h"

namespace opstest {
namespace {

std::vector<Case> layoutCases() {
  const auto F = kFloats;
  return {
      {"broad_right_aligned", {sh({17})}, broadOp(sh({3, 17})), broadcastRef({3, 17}, {1}), sh({3, 17}), F},
      {"broad_right_aligned_size1", {sh({1, 3})}, broadOp(sh({17, 5, 3})), broadcastRef({17, 5, 3}, {1, 2}), sh({17, 5, 3}), F},
      {"broad_same_rank", {sh({3, 1})}, broadOp(sh({3, 17})), broadcastRef({3, 17}, {0, 1}), sh({3, 17}), F},
      {"broad_scalar", {sh({})}, broadOp(sh({17, 1, 3})), broadcastRef({17, 1, 3}, {}), sh({17, 1, 3}), F},
      // Tags in another order than the target's: needs a transpose.
      {"broad_tags", {sh({3, 2}, {"d", "b"})}, broadOp(sh({2, 5, 3}, {"b", "s", "d"})), broadcastRef({2, 5, 3}, {2, 0}), sh({2, 5, 3}, {"b", "s", "d"}), F},
      {"broad_tags_size1", {sh({1}, {"d"})}, broadOp(sh({4, 3}, {"b", "d"})), broadcastRef({4, 3}, {1}), sh({4, 3}, {"b", "d"}), F},
      {"broadcast_leading", {sh({3})}, broadcastOp(sh({3, 17}), {0}), broadcastRef({3, 17}, {0}), sh({3, 17}), F},
      {"broadcast_transposing", {sh({3, 17})}, broadcastOp(sh({17, 5, 3}), {2, 0}), broadcastRef({17, 5, 3}, {2, 0}), sh({17, 5, 3}), F},
      {"broadcast_transposing_size1", {sh({1, 17})}, broadcastOp(sh({17, 3}), {1, 0}), broadcastRef({17, 3}, {1, 0}), sh({17, 3}), F},
      {"broadcast_scalar", {sh({})}, broadcastOp(sh({129}), {}), broadcastRef({129}, {}), sh({129}), F},
      {"broadcast_tagged_target", {sh({3})}, broadcastOp(sh({2, 3}, {"b", "d"}), {1}), broadcastRef({2, 3}, {1}), sh({2, 3}, {"b", "d"}), F},
      {"broad_untagged_ones_onto_tagged", {sh({1, 1})}, broadOp(sh({2, 3}, {"b", "d"})), broadcastRef({2, 3}, {0, 1}), sh({2, 3}, {"b", "d"}), F},
      {"broad_untagged_scalar_onto_tagged", {sh({})}, broadOp(sh({2, 3}, {"b", "d"})), broadcastRef({2, 3}, {}), sh({2, 3}, {"b", "d"}), F},

      {"reshape_2d", {sh({3, 17})}, reshapeOp({17, 3}), sameValues(), sh({17, 3}), F},
      {"reshape_split", {sh({129})}, reshapeOp({3, 43}), sameValues(), sh({3, 43}), F},
      {"reshape_flatten_drops_tags", {sh({17, 1, 3}, {"a", "b", "c"})}, reshapeOp({51}), sameValues(), sh({51}), F},
      {"reshape_from_scalar", {sh({})}, reshapeOp({1, 1}), sameValues(), sh({1, 1}), F},
      {"reshape_scalar_to_rank1", {sh({})}, reshapeOp({1}), sameValues(), sh({1}), F},
      {"reshape_rank1_to_scalar", {sh({1})}, reshapeOp({}), sameValues(), sh({}), F},
      {"reshape_to_scalar", {sh({1, 1, 1})}, reshapeOp({}), sameValues(), sh({}), F},

      {"transpose_2d", {sh({3, 17})}, transposeOp({1, 0}), transposeRef({1, 0}), sh({17, 3}), F},
      {"transpose_3d", {sh({17, 1, 3})}, transposeOp({2, 0, 1}), transposeRef({2, 0, 1}), sh({3, 17, 1}), F},
      {"transpose_negative", {sh({3, 4, 17})}, transposeOp({1, -1, 0}), transposeRef({1, 2, 0}), sh({4, 17, 3}), F},
      {"transpose_tags", {sh({3, 17, 2}, {"b", "s", "d"})}, transposeOp({"d", "b", "s"}), transposeRef({2, 0, 1}), sh({2, 3, 17}, {"d", "b", "s"}), F},
      {"transpose_scalar", {sh({})}, transposeOp({}), transposeRef({}), sh({}), F},
      {"withTags", {sh({3, 17})}, [](const Ts& x) { return x[0].withTags({"b", "d"}); }, sameValues(), sh({3, 17}, {"b", "d"}), F},
  };
}

// ---- references for the more shape ops ----

using radix::Padding;
using radix::Slice;

/// Pads each axis by per[i]; negative low/high crop.
Ref padRef(std::vector<Padding> per, double value) {
  return [=](const std::vector<Host>& in) {
    const Dims& d = in[0].dims;
    Dims outDims;
    for (size_t i = 0; i < d.size(); ++i)
      outDims.push_back(d[i] + std::max<int64_t>(d[i] - 1, 0) * per[i].interior + per[i].low + per[i].high);
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims src(d.size());
      for (size_t i = 0; i < d.size(); ++i) {
        const int64_t p = o[i] - per[i].low, step = per[i].interior + 1;
        if (p < 0 || p % step != 0 || p / step >= d[i]) return out.push_back(value);
        src[i] = p / step;
      }
      out.push_back(in[0].v[offsetOf(d, src)]);
    });
    return out;
  };
}

Ref reverseRef(std::vector<int> axes) {
  return [=](const std::vector<Host>& in) {
    const Dims& d = in[0].dims;
    Vals out;
    forEachIndex(d, [&](const Dims& o) {
      Dims src = o;
      for (int a : axes) src[a] = d[a] - 1 - o[a];
      out.push_back(in[0].v[offsetOf(d, src)]);
    });
    return out;
  };
}

/// Python's x[start:end:step] on each axis (defaults: the whole axis).
Ref sliceRef(std::vector<std::pair<int, Slice>> slices) {
  return [=](const std::vector<Host>& in) {
    const Dims& d = in[0].dims;
    Dims start(d.size(), 0), step(d.size(), 1), outDims = d;
    for (auto [a, s] : slices) {
      std::vector<int64_t> picked;  // the Python way: walk the range
      int64_t b = s.start < 0 ? std::max<int64_t>(s.start + d[a], 0) : std::min(s.start, d[a]);
      int64_t e = s.end == Slice::kToTheEnd ? d[a] : s.end < 0 ? std::max<int64_t>(s.end + d[a], 0) : std::min(s.end, d[a]);
      for (int64_t i = b; i < e; i += s.step) picked.push_back(i);
      start[a] = b, step[a] = s.step, outDims[a] = static_cast<int64_t>(picked.size());
    }
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims src(d.size());
      for (size_t i = 0; i < d.size(); ++i) src[i] = start[i] + o[i] * step[i];
      out.push_back(in[0].v[offsetOf(d, src)]);
    });
    return out;
  };
}

/// Concatenation of all inputs along `axis`.
Ref concatRef(int axis) {
  return [=](const std::vector<Host>& in) {
    Dims outDims = in[0].dims;
    outDims[axis] = 0;
    for (const Host& h : in) outDims[axis] += h.dims[axis];
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims src = o;
      for (const Host& h : in) {
        if (src[axis] < h.dims[axis]) return out.push_back(h.v[offsetOf(h.dims, src)]);
        src[axis] -= h.dims[axis];
      }
    });
    return out;
  };
}

/// Inputs stacked along a new axis at `position`.
Ref stackRef(int position) {
  return [=](const std::vector<Host>& in) {
    Dims outDims = in[0].dims;
    outDims.insert(outDims.begin() + position, static_cast<int64_t>(in.size()));
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims src = o;
      src.erase(src.begin() + position);
      out.push_back(in[o[position]].v[offsetOf(in[0].dims, src)]);
    });
    return out;
  };
}

/// Tiles (stutter = false) or repeats each element (stutter = true) n[i] times along axis i.
Ref repeatRef(Dims n, bool stutter) {
  return [=](const std::vector<Host>& in) {
    const Dims& d = in[0].dims;
    Dims outDims;
    for (size_t i = 0; i < d.size(); ++i) outDims.push_back(d[i] * n[i]);
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims src(d.size());
      for (size_t i = 0; i < d.size(); ++i) src[i] = stutter ? o[i] / n[i] : o[i] % d[i];
      out.push_back(in[0].v[offsetOf(d, src)]);
    });
    return out;
  };
}

/// Element i of the result is element i - shift (mod dim) of the input along `axis`.
Ref rollRef(int axis, int64_t shift) {
  return [=](const std::vector<Host>& in) {
    const Dims& d = in[0].dims;
    Vals out;
    forEachIndex(d, [&](const Dims& o) {
      Dims src = o;
      src[axis] = ((o[axis] - shift) % d[axis] + d[axis]) % d[axis];
      out.push_back(in[0].v[offsetOf(d, src)]);
    });
    return out;
  };
}

/// The parts of `sizes` along `axis`, concatenated in reverse order.
Ref reversedPartsRef(int axis, Dims sizes) {
  return [=](const std::vector<Host>& in) {
    const Dims& d = in[0].dims;
    Dims starts;
    int64_t s = 0;
    for (int64_t n : sizes) starts.push_back(s), s += n;
    Vals out;
    forEachIndex(d, [&](const Dims& o) {
      Dims src = o;
      int64_t pos = o[axis];
      for (size_t k = sizes.size(); k-- > 0;) {
        if (pos < sizes[k]) {
          src[axis] = starts[k] + pos;
          break;
        }
        pos -= sizes[k];
      }
      out.push_back(in[0].v[offsetOf(d, src)]);
    });
    return out;
  };
}

Tensor reversedConcat(std::vector<Tensor> parts, radix::Axis axis) {
  std::reverse(parts.begin(), parts.end());
  return Tensor::concatenate(parts, axis);
}

std::vector<Case> moreShapeCases() {
  const auto F = kFloats;
  const std::vector<DType> FI = {DType::f32, DType::f16, DType::bf16, DType::i32};
  using T = std::vector<Tag>;
  return {
      // reshape: -1, tags of untouched leading/trailing axes.
      {"reshape_infer", {sh({3, 17, 2})}, reshapeOp({-1, 2}), sameValues(), sh({51, 2}), FI},
      {"reshape_infer_first", {sh({129})}, reshapeOp({3, -1}), sameValues(), sh({3, 43}), F},
      {"reshape_keeps_outer_tags", {sh({2, 3, 4, 5}, {"b", "h", "d", "c"})}, reshapeOp({2, 12, 5}), sameValues(), sh({2, 12, 5}, T{"b", "", "c"}), F},
      {"reshape_keeps_leading_tags", {sh({3, 17, 1}, {"b", "s", "x"})}, reshapeOp({3, 17}), sameValues(), sh({3, 17}, T{"b", "s"}), F},
      {"reshape_same_dims_keeps_tags", {sh({3, 7}, {"b", "d"})}, reshapeOp({3, -1}), sameValues(), sh({3, 7}, T{"b", "d"}), F},

      {"splitAxis", {sh({3, 12}, {"b", "d"})}, [](const Ts& x) { return x[0].splitAxis("d", {{"h", 3}, {"hd", -1}}); }, sameValues(), sh({3, 3, 4}, T{"b", "h", "hd"}), FI},
      {"splitAxis_untagged_first", {sh({21, 2})}, [](const Ts& x) { return x[0].splitAxis(0, {{"", 7}, {"", 3}}); }, sameValues(), sh({7, 3, 2}), F},
      {"mergeAxes", {sh({3, 3, 4, 1}, {"b", "h", "hd", "x"})}, [](const Ts& x) { return x[0].mergeAxes({"h", "hd"}, "d"); }, sameValues(), sh({3, 12, 1}, T{"b", "d", "x"}), FI},
      {"mergeAxes_all_untagged", {sh({3, 17})}, [](const Ts& x) { return x[0].mergeAxes({0, -1}, ""); }, sameValues(), sh({51}), F},
      {"flatten", {sh({3, 1, 17}, {"a", "b", "c"})}, [](const Ts& x) { return x[0].flatten(); }, sameValues(), sh({51}), F},
      {"flatten_scalar", {sh({})}, [](const Ts& x) { return x[0].flatten(); }, sameValues(), sh({1}), F},
      {"squeeze_axis", {sh({3, 1, 7}, {"b", "s", "d"})}, [](const Ts& x) { return x[0].squeeze("s"); }, sameValues(), sh({3, 7}, T{"b", "d"}), FI},
      {"squeeze_all", {sh({1, 3, 1, 7, 1}, {"a", "b", "s", "d", "e"})}, [](const Ts& x) { return x[0].squeeze(); }, sameValues(), sh({3, 7}, T{"b", "d"}), F},
      {"squeeze_to_scalar", {sh({1, 1})}, [](const Ts& x) { return x[0].squeeze(); }, sameValues(), sh({}), F},
      {"insertAxes", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].insertAxes(1, {"h", "k"}); }, sameValues(), sh({3, 1, 1, 7}, T{"b", "h", "k", "d"}), FI},
      {"insertAxes_end", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].insertAxes(-1, {"h"}); }, sameValues(), sh({3, 7, 1}, T{"b", "d", "h"}), F},
      {"insertAxes_before_tag", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].insertAxes("d", {"h"}); }, sameValues(), sh({3, 1, 7}, T{"b", "h", "d"}), F},
      {"insertAxes_scalar", {sh({})}, [](const Ts& x) { return x[0].insertAxes(0, {""}); }, sameValues(), sh({1}), F},
      {"appendAxes", {sh({7}, {"d"})}, [](const Ts& x) { return x[0].appendAxes({"x"}); }, sameValues(), sh({7, 1}, T{"d", "x"}), F},
      {"rename", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].rename({{"d", "k"}, {"b", "n"}}); }, sameValues(), sh({3, 7}, T{"n", "k"}), FI},
      {"rename_swap", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].rename({{"d", "b"}, {"b", "d"}}); }, sameValues(), sh({3, 7}, T{"d", "b"}), F},
      {"swapAxes", {sh({3, 5, 7}, {"b", "s", "d"})}, [](const Ts& x) { return x[0].swapAxes("b", -1); }, transposeRef({2, 1, 0}), sh({7, 5, 3}, T{"d", "s", "b"}), FI},

      // pad
      {"pad_low_high", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].pad({{"d", {.low = 1, .high = 2}}}, 0.5); }, padRef({{}, {1, 2, 0}}, 0.5), sh({3, 10}, T{"b", "d"}), F},
      {"pad_interior", {sh({3, 7})}, [](const Ts& x) { return x[0].pad({{0, {.interior = 2}}, {1, {.low = 2, .interior = 1}}}, -1); }, padRef({{0, 0, 2}, {2, 0, 1}}, -1), sh({7, 15}), F},
      {"pad_crop", {sh({17})}, [](const Ts& x) { return x[0].pad({{0, {.low = -3, .high = -1}}}); }, padRef({{-3, -1, 0}}, 0), sh({13}), F},
      {"pad_crop_and_grow", {sh({5, 1})}, [](const Ts& x) { return x[0].pad({{0, {.low = 2, .high = -4, .interior = 1}}, {1, {.high = 3}}}, 7); }, padRef({{2, -4, 1}, {0, 3, 0}}, 7), sh({7, 4}), F},
      {"pad_empty_input", {sh({0, 3})}, [](const Ts& x) { return x[0].pad({{0, {.low = 2, .interior = 4}}}, 3); }, padRef({{2, 0, 4}, {}}, 3), sh({2, 3}), F},
      {"pad_int", {sh({3, 7})}, [](const Ts& x) { return x[0].pad({{1, {.low = 1, .high = 1, .interior = 1}}}, 9); }, padRef({{}, {1, 1, 1}}, 9), sh({3, 15}, DType::i32), {DType::i32}, -50, 50},

      // reverse
      {"reverse_one", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].reverse({"d"}); }, reverseRef({1}), sh({3, 7}, T{"b", "d"}), FI},
      {"reverse_two", {sh({17, 1, 3})}, [](const Ts& x) { return x[0].reverse({0, -1}); }, reverseRef({0, 2}), sh({17, 1, 3}), F},
      {"reverse_none", {sh({3})}, [](const Ts& x) { return x[0].reverse({}); }, sameValues(), sh({3}), F},

      // slice
      {"slice1d_python", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].slice1d("d", {.start = 1, .end = -1, .step = 2}); }, sliceRef({{1, {1, -1, 2}}}), sh({3, 8}, T{"b", "d"}), FI},
      {"slice1d_negative_start", {sh({17})}, [](const Ts& x) { return x[0].slice1d(0, {.start = -5}); }, sliceRef({{0, {-5, Slice::kToTheEnd, 1}}}), sh({5}), F},
      {"slice1d_clamped", {sh({7})}, [](const Ts& x) { return x[0].slice1d(0, {.start = -100, .end = 100, .step = 3}); }, sliceRef({{0, {-100, 100, 3}}}), sh({3}), F},
      {"slice1d_empty", {sh({7, 2})}, [](const Ts& x) { return x[0].slice1d(0, {.start = 5, .end = 2}); }, sliceRef({{0, {5, 2, 1}}}), sh({0, 2}), F},
      {"slice_two_axes", {sh({7, 5, 3})}, [](const Ts& x) { return x[0].slice({{0, {.start = -2}}, {2, {.step = 2}}}); }, sliceRef({{0, {-2, Slice::kToTheEnd, 1}}, {2, {0, Slice::kToTheEnd, 2}}}), sh({2, 5, 2}), F},
      {"slice_huge_step", {sh({3, 5})}, [](const Ts& x) { return x[0].slice({{1, {.start = 2, .step = INT64_MAX}}}); }, sliceRef({{1, {2, Slice::kToTheEnd, 1000}}}), sh({3, 1}), F},
      {"slice_step_larger_than_dim", {sh({3, 5})}, [](const Ts& x) { return x[0].slice({{1, {.start = 1, .step = 9}}}); }, sliceRef({{1, {1, Slice::kToTheEnd, 9}}}), sh({3, 1}), F},

      {"choose1d_negative", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].choose1d("d", -2); }, sliceRef({{1, {5, 6, 1}}}), sh({3}, T{"b"}), FI},
      {"choose_two_axes", {sh({3, 5, 7}, {"a", "b", "c"})}, [](const Ts& x) { return x[0].choose({{"c", 0}, {"a", 2}}); }, sliceRef({{0, {2, 3, 1}}, {2, {0, 1, 1}}}), sh({5}, T{"b"}), F},

      // concatenate, stack
      {"concatenate_last", {sh({3, 2}, {"b", "d"}), sh({3, 5}, {"b", "d"}), sh({3, 1}, {"b", "d"})}, [](const Ts& x) { return Tensor::concatenate(x, "d"); }, concatRef(1), sh({3, 8}, T{"b", "d"}), FI},
      {"concatenate_first", {sh({1, 17}), sh({3, 17})}, [](const Ts& x) { return Tensor::concatenate(x, 0); }, concatRef(0), sh({4, 17}), F},
      {"concatenate_untagged_takes_tags", {sh({2, 3}), sh({2, 4}, {"b", "d"})}, [](const Ts& x) { return Tensor::concatenate(x, -1); }, concatRef(1), sh({2, 7}, T{"b", "d"}), F},
      {"concatenate_one", {sh({3})}, [](const Ts& x) { return Tensor::concatenate(x, 0); }, concatRef(0), sh({3}), F},
      {"stack_front", {sh({3, 7}, {"b", "d"}), sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return Tensor::stack(x, 0, "n"); }, stackRef(0), sh({2, 3, 7}, T{"n", "b", "d"}), FI},
      {"stack_middle", {sh({3, 7}), sh({3, 7}), sh({3, 7})}, [](const Ts& x) { return Tensor::stack(x, 1, "n"); }, stackRef(1), sh({3, 3, 7}, T{"", "n", ""}), F},
      {"stack_end", {sh({5}, {"d"}), sh({5}, {"d"})}, [](const Ts& x) { return Tensor::stack(x, -1, "n"); }, stackRef(1), sh({5, 2}, T{"d", "n"}), F},

      // repeat, stutter
      {"repeat", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].repeat({2, 3}); }, repeatRef({2, 3}, false), sh({6, 21}, T{"b", "d"}), FI},
      // An empty repeat inside a concatenation (one zero-size result per compiled group: two crash
      // buffer-results-to-out-params, see the report).
      {"repeat_empty", {sh({0, 3}), sh({2, 6})}, [](const Ts& x) { return Tensor::concatenate({x[0].repeat({3, 2}), x[1]}, 0); },
       [](const std::vector<Host>& in) { return in[1].v; }, sh({2, 6}), F},
      {"repeat1d", {sh({3, 1, 7})}, [](const Ts& x) { return x[0].repeat1d(1, 5); }, repeatRef({1, 5, 1}, false), sh({3, 5, 7}), F},
      {"stutter", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].stutter({2, 3}); }, repeatRef({2, 3}, true), sh({6, 21}, T{"b", "d"}), FI},
      {"stutter1d", {sh({17})}, [](const Ts& x) { return x[0].stutter1d(0, 2); }, repeatRef({2}, true), sh({34}), F},

      // split, chunks (parts concatenated in reverse, so that every part is checked)
      {"split", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return reversedConcat(x[0].split("d", {5, 0, 12}), "d"); }, reversedPartsRef(1, {5, 0, 12}), sh({3, 17}, T{"b", "d"}), FI},
      {"chunkExact", {sh({9, 2})}, [](const Ts& x) { return reversedConcat(x[0].chunkExact(0, 3), 0); }, reversedPartsRef(0, {3, 3, 3}), sh({9, 2}), F},
      {"chunkAllowTrailing", {sh({7})}, [](const Ts& x) { return reversedConcat(x[0].chunkAllowTrailing(0, 3), 0); }, reversedPartsRef(0, {3, 3, 1}), sh({7}), F},
      {"split_parts_shapes", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].split(1, {2, 5})[1]; }, sliceRef({{1, {2, 7, 1}}}), sh({3, 5}, T{"b", "d"}), F},

      // toDiagonal, cartesianProduct
      {"toDiagonal", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].toDiagonal("d", {"i", "j"}); },
       [](const std::vector<Host>& in) {
         Vals out;
         forEachIndex({3, 7, 7}, [&](const Dims& o) { out.push_back(o[1] == o[2] ? in[0].v[o[0] * 7 + o[1]] : 0); });
         return out;
       },
       sh({3, 7, 7}, T{"b", "i", "j"}), FI},
      {"toDiagonal_first_untagged", {sh({5})}, [](const Ts& x) { return x[0].toDiagonal(0, {"", ""}); },
       [](const std::vector<Host>& in) {
         Vals out;
         forEachIndex({5, 5}, [&](const Dims& o) { out.push_back(o[0] == o[1] ? in[0].v[o[0]] : 0); });
         return out;
       },
       sh({5, 5}), F},
      {"cartesianProduct_second", {sh({3}, {"x"}), sh({2}, {"y"})}, [](const Ts& x) { return Tensor::cartesianProduct(x)[1]; },
       [](const std::vector<Host>& in) { return broadcastRef({3, 2}, {1})({in[1]}); }, sh({3, 2}, T{"x", "y"}), F},
      {"cartesianProductStacked", {sh({3}, {"x"}), sh({2}, {"y"})}, [](const Ts& x) { return Tensor::cartesianProductStacked(x, "coord"); },
       [](const std::vector<Host>& in) {
         Vals out;
         forEachIndex({3, 2, 2}, [&](const Dims& o) { out.push_back(o[2] == 0 ? in[0].v[o[0]] : in[1].v[o[1]]); });
         return out;
       },
       sh({3, 2, 2}, T{"x", "y", "coord"}), FI},

      // roll
      {"roll_right", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].roll("d", 2); }, rollRef(1, 2), sh({3, 7}, T{"b", "d"}), FI},
      {"roll_left_wraps", {sh({17})}, [](const Ts& x) { return x[0].roll(0, -20); }, rollRef(0, -20), sh({17}), F},
      {"roll_full_turn", {sh({5, 3})}, [](const Ts& x) { return x[0].roll(0, 10); }, rollRef(0, 10), sh({5, 3}), F},
  };
}

std::vector<ErrorCase> errorCases() {
  [[maybe_unused]] const DType f16 = DType::f16, i32 = DType::i32, b = DType::bool_;
  return {
      {"broad_smaller", {sh({3, 17})}, [](const Ts& x) { return x[0].broad(sh({17})); }, "[broad]", "{3,17}:f32 to smaller {17}:f32"},
      {"broad_tags_differ", {sh({3}, {"a"})}, [](const Ts& x) { return x[0].broad(sh({3}, {"d"})); }, "[broad]", "{a=3}:f32 to {d=3}:f32"},
      {"broad_unknown_tag", {sh({3}, {"a"})}, [](const Ts& x) { return x[0].broad(sh({2, 3}, {"b", "d"})); }, "[broad]", "no axis tagged \"a\" in {b=2,d=3}:f32"},
      {"broad_sizes", {sh({3})}, [](const Ts& x) { return x[0].broad(sh({2, 4})); }, "[broad]", "axis 0 of {3}:f32 to axis 1 of {2,4}:f32"},
      {"broad_untagged_onto_tagged", {sh({16})}, [](const Ts& x) { return x[0].broad(sh({2, 16, 16, 16}, {"b", "c", "h", "w"})); }, "[broad]",
       "{16}:f32 is untagged and {b=2,c=16,h=16,w=16}:f32 is tagged: Radix does not align axes by position; tag it with the axes it maps to, e.g. x.withTags({\"c\"})"},
      {"broad_untagged_same_rank", {sh({2, 3})}, [](const Ts& x) { return x[0].broad(sh({2, 3}, {"b", "d"})); }, "[broad]", "{2,3}:f32 is untagged and {b=2,d=3}:f32 is tagged"},
      {"broad_untagged_hint_unmatched", {sh({5})}, [](const Ts& x) { return x[0].broad(sh({2, 3}, {"b", "d"})); }, "[broad]", "e.g. x.withTags({...}) with tags of {b=2,d=3}:f32"},
      {"broad_tagged_onto_untagged", {sh({3}, {"d"})}, [](const Ts& x) { return x[0].broad(sh({3})); }, "[broad]", "{3}:f32 is untagged and {d=3}:f32 is tagged"},
      {"broadcast_tags_differ", {sh({3}, {"a"})}, [](const Ts& x) { return x[0].broadcast(sh({2, 3}, {"b", "d"}), {1}); }, "[broadcast]",
       "axis 0 of {a=3}:f32 is tagged \"a\" but goes to axis 1 of {b=2,d=3}:f32, tagged \"d\""},
      {"broadcast_sizes", {sh({3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {1}); }, "[broadcast]", "axis 0 of {3}:f32 to axis 1 of {3,17}:f32"},
      {"broadcast_axis_count", {sh({3, 17})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {0}); }, "[broadcast]", "1 axes for {3,17}:f32"},
      {"broadcast_axis_range", {sh({3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {2}); }, "[broadcast]", "axis 2 out of range for {3,17}:f32"},
      {"broadcast_axis_twice", {sh({3, 3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 3}), {1, 1}); }, "[broadcast]", "{3,3}:f32 is targeted twice"},
      {"reshape_count", {sh({3, 17})}, [](const Ts& x) { return x[0].reshape({50}); }, "[reshape]", "{3,17}:f32 (51 elements) to {50}:f32"},
      {"transpose_duplicate", {sh({3, 17})}, [](const Ts& x) { return x[0].transpose({0, 0}); }, "[transpose]", "axis 0 appears twice in the permutation of {3,17}:f32"},
      {"transpose_length", {sh({3, 17})}, [](const Ts& x) { return x[0].transpose({0}); }, "[transpose]", "1 axes in the permutation of {3,17}:f32"},
      {"transpose_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].transpose({"d", "x"}); }, "[transpose]", "no axis tagged \"x\" in {b=3,d=17}:f32"},
      {"reshape_two_inferred", {sh({3, 17})}, [](const Ts& x) { return x[0].reshape({-1, -1}); }, "[reshape]", "more than one -1 in {-1,-1} for {3,17}:f32"},
      {"reshape_bad_infer", {sh({3, 17})}, [](const Ts& x) { return x[0].reshape({2, -1}); }, "[reshape]", "can't infer the -1 in {2,-1} from {3,17}:f32"},
      {"reshape_negative", {sh({3, 17})}, [](const Ts& x) { return x[0].reshape({-3, -17}); }, "[reshape]", "negative dim -3"},
      {"reshape_too_large", {sh({4})}, [](const Ts& x) { return x[0].reshape({int64_t{1} << 40, int64_t{1} << 40}); }, "[reshape]", "can't reshape {4}:f32 (4 elements) to {1099511627776,1099511627776}"},
      {"reshape_infer_too_large", {sh({4})}, [](const Ts& x) { return x[0].reshape({int64_t{1} << 62, -1}); }, "[reshape]", "can't infer the -1"},
      {"repeat_too_large_shape", {sh({1 << 20, 1 << 20})}, [](const Ts& x) { return x[0].repeat({1 << 20, 1 << 20}); }, "[repeat]", "larger than 2^62 bytes"},
      {"reshape_rank", {sh({1})}, [](const Ts& x) { return x[0].reshape({1, 1, 1, 1, 1, 1, 1, 1, 1}); }, "[reshape]", "rank 9 exceeds the maximum of 8"},
      {"splitAxis_product", {sh({3, 12}, {"b", "d"})}, [](const Ts& x) { return x[0].splitAxis("d", {{"h", 5}, {"hd", 2}}); }, "[splitAxis]", "can't split axis \"d\" of {b=3,d=12}:f32 into {5,2}"},
      {"splitAxis_tag_taken", {sh({3, 12}, {"b", "d"})}, [](const Ts& x) { return x[0].splitAxis("d", {{"b", 3}, {"hd", 4}}); }, "[splitAxis]", "tag \"b\" would name two axes"},
      {"splitAxis_axis", {sh({3, 12})}, [](const Ts& x) { return x[0].splitAxis(2, {{"h", 3}}); }, "[splitAxis]", "axis 2 out of range for {3,12}:f32"},
      {"mergeAxes_not_adjacent", {sh({3, 4, 5}, {"a", "b", "c"})}, [](const Ts& x) { return x[0].mergeAxes({"a", "c"}, "d"); }, "[mergeAxes]", "axis \"c\" of {a=3,b=4,c=5}:f32 does not follow axis \"a\""},
      {"mergeAxes_tag", {sh({3, 4}, {"a", "b"})}, [](const Ts& x) { return x[0].mergeAxes({"a", "x"}, "d"); }, "[mergeAxes]", "no axis tagged \"x\""},
      {"squeeze_not_1", {sh({3, 4}, {"a", "b"})}, [](const Ts& x) { return x[0].squeeze("b"); }, "[squeeze]", "axis \"b\" of {a=3,b=4}:f32 has size 4, not 1"},
      {"insertAxes_position", {sh({3, 4})}, [](const Ts& x) { return x[0].insertAxes(3, {"h"}); }, "[insertAxes]", "position 3 out of range for inserting axes into {3,4}:f32"},
      {"insertAxes_tag_taken", {sh({3, 4}, {"a", "b"})}, [](const Ts& x) { return x[0].insertAxes(0, {"b"}); }, "[insertAxes]", "tag \"b\" would name two axes"},
      {"insertAxes_rank", {sh({1, 1, 1, 1, 1, 1, 1, 1})}, [](const Ts& x) { return x[0].insertAxes(0, {""}); }, "[insertAxes]", "rank 9, more than the maximum of 8"},
      {"appendAxes_tag_taken", {sh({3}, {"a"})}, [](const Ts& x) { return x[0].appendAxes({"a"}); }, "[appendAxes]", "tag \"a\" would name two axes"},
      {"rename_unknown", {sh({3, 4}, {"a", "b"})}, [](const Ts& x) { return x[0].rename({{"c", "d"}}); }, "[rename]", "no axis tagged \"c\" in {a=3,b=4}:f32"},
      {"rename_collides", {sh({3, 4}, {"a", "b"})}, [](const Ts& x) { return x[0].rename({{"a", "b"}}); }, "[rename]", "tag \"b\" would name two axes"},
      {"swapAxes_axis", {sh({3, 4})}, [](const Ts& x) { return x[0].swapAxes(0, 5); }, "[swapAxes]", "axis 5 out of range for {3,4}:f32"},
      {"pad_interior_negative", {sh({3, 4})}, [](const Ts& x) { return x[0].pad({{1, {.interior = -1}}}); }, "[pad]", "negative interior padding -1 for axis 1 of {3,4}:f32"},
      {"pad_crop_too_much", {sh({3, 4})}, [](const Ts& x) { return x[0].pad({{1, {.low = -3, .high = -2}}}); }, "[pad]", "crops more than axis 1 of {3,4}:f32"},
      {"pad_huge", {sh({3, 4})}, [](const Ts& x) { return x[0].pad({{1, {.low = INT64_MIN}}}); }, "[pad]", "padding of axis 1 of {3,4}:f32 is too large"},
      {"repeat_huge", {sh({3, 4})}, [](const Ts& x) { return x[0].repeat({1, INT64_MAX}); }, "[repeat]", "repeat count 9223372036854775807 for axis 1 of {3,4}:f32 is too large"},
      {"chunkExact_empty_axis", {sh({0, 4})}, [](const Ts& x) { return x[0].chunkExact(0, INT64_MAX)[0]; }, "[chunkExact]", "does not split into"},
      {"pad_twice", {sh({3, 4}, {"a", "b"})}, [](const Ts& x) { return x[0].pad({{1, {.low = 1}}, {"b", {.low = 1}}}); }, "[pad]", "axis \"b\" of {a=3,b=4}:f32 is padded twice"},
      {"reverse_axis", {sh({3, 4})}, [](const Ts& x) { return x[0].reverse({2}); }, "[reverse]", "axis 2 out of range for {3,4}:f32"},
      {"reverse_twice", {sh({3, 4})}, [](const Ts& x) { return x[0].reverse({1, -1}); }, "[reverse]", "axis -1 of {3,4}:f32 is given twice"},
      {"slice1d_step", {sh({3, 4})}, [](const Ts& x) { return x[0].slice1d(1, {.step = 0}); }, "[slice1d]", "step 0 for axis 1 of {3,4}:f32 must be >= 1"},
      {"slice1d_tag", {sh({3, 4}, {"a", "b"})}, [](const Ts& x) { return x[0].slice1d("c", {}); }, "[slice1d]", "no axis tagged \"c\""},
      {"slice_twice", {sh({3, 4})}, [](const Ts& x) { return x[0].slice({{0, {}}, {-2, {}}}); }, "[slice]", "axis -2 of {3,4}:f32 is sliced twice"},
      {"choose1d_range", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].choose1d("d", 7); }, "[choose1d]", "index 7 out of range for axis \"d\" of {b=3,d=7}:f32"},
      {"choose_range", {sh({3, 7})}, [](const Ts& x) { return x[0].choose({{0, -4}}); }, "[choose]", "index -4 out of range for axis 0 of {3,7}:f32"},
      {"concatenate_tags", {sh({3, 4}, {"a", "b"}), sh({3, 4}, {"a", "c"})}, [](const Ts& x) { return Tensor::concatenate(x, 0); }, "[concatenate]", "tags differ at axis 1: {a=3,b=4}:f32 and {a=3,c=4}:f32"},
      {"concatenate_dims", {sh({3, 4}), sh({3, 5})}, [](const Ts& x) { return Tensor::concatenate(x, 0); }, "[concatenate]", "dims differ at axis 1: {3,4}:f32 and {3,5}:f32"},
      {"concatenate_dtype", {sh({3, 4}), sh({3, 4}, f16)}, [](const Ts& x) { return Tensor::concatenate(x, 0); }, "[concatenate]", "can't concatenate {3,4}:f16 with {3,4}:f32"},
      {"concatenate_axis", {sh({3, 4}), sh({3, 4})}, [](const Ts& x) { return Tensor::concatenate(x, "d"); }, "[concatenate]", "no axis tagged \"d\" in {3,4}:f32"},
      {"concatenate_none", {}, [](const Ts&) { return Tensor::concatenate({}, 0); }, "[concatenate]", "no tensors"},
      {"stack_shapes", {sh({3}), sh({4})}, [](const Ts& x) { return Tensor::stack(x, 0, "n"); }, "[stack]", "shapes differ: {3}:f32 and {4}:f32"},
      {"stack_tag_taken", {sh({3}, {"n"}), sh({3}, {"n"})}, [](const Ts& x) { return Tensor::stack(x, 0, "n"); }, "[stack]", "tag \"n\" would name two axes"},
      {"repeat_count", {sh({3, 4})}, [](const Ts& x) { return x[0].repeat({2}); }, "[repeat]", "1 repeat counts for {3,4}:f32"},
      {"repeat1d_zero", {sh({3, 4})}, [](const Ts& x) { return x[0].repeat1d(0, 0); }, "[repeat1d]", "repeat count 0 for axis 0 of {3,4}:f32 must be >= 1"},
      {"stutter_count", {sh({3, 4}, {"a", "b"})}, [](const Ts& x) { return x[0].stutter({2, -1}); }, "[stutter]", "repeat count -1 for axis 1 of {a=3,b=4}:f32 must be >= 1"},
      {"stutter1d_axis", {sh({3, 4})}, [](const Ts& x) { return x[0].stutter1d(4, 2); }, "[stutter1d]", "axis 4 out of range for {3,4}:f32"},
      {"split_sizes", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].split("d", {3, 3})[0]; }, "[split]", "sizes {3,3} sum to 6, not to axis \"d\" of {b=3,d=7}:f32"},
      {"chunkExact_divisible", {sh({7})}, [](const Ts& x) { return x[0].chunkExact(0, 2)[0]; }, "[chunkExact]", "axis 0 of {7}:f32 does not split into 2 equal chunks"},
      {"chunkAllowTrailing_size", {sh({7})}, [](const Ts& x) { return x[0].chunkAllowTrailing(0, 0)[0]; }, "[chunkAllowTrailing]", "chunk size 0"},
      {"toDiagonal_tag_taken", {sh({3, 7}, {"b", "d"})}, [](const Ts& x) { return x[0].toDiagonal("d", {"b", "j"}); }, "[toDiagonal]", "tag \"b\" would name two axes"},
      {"toDiagonal_axis", {sh({3, 7})}, [](const Ts& x) { return x[0].toDiagonal(2, {"i", "j"}); }, "[toDiagonal]", "axis 2 out of range for {3,7}:f32"},
      {"cartesianProduct_rank", {sh({3, 2})}, [](const Ts& x) { return Tensor::cartesianProduct(x)[0]; }, "[cartesianProduct]", "expects rank-1 tensors, got {3,2}:f32"},
      {"cartesianProduct_tags", {sh({3}, {"x"}), sh({2}, {"x"})}, [](const Ts& x) { return Tensor::cartesianProduct(x)[0]; }, "[cartesianProduct]", "tag \"x\" would name two axes"},
      {"cartesianProductStacked_dtypes", {sh({3}, {"x"}), sh({2}, {"y"}, i32)}, [](const Ts& x) { return Tensor::cartesianProductStacked(x, "c"); }, "[cartesianProductStacked]", "dtypes differ: {x=3}:f32 and {y=2}:i32"},
      {"roll_axis", {sh({7}, {"d"})}, [](const Ts& x) { return x[0].roll("s", 1); }, "[roll]", "no axis tagged \"s\" in {d=7}:f32"},
  };
}

}  // namespace

RADIX_OPS_CASES("layout", layoutCases);
RADIX_OPS_CASES("shape", moreShapeCases);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest
