// Indexing (gather, gatherSlices, scatter, dynamicSlice, dynamicUpdateSlice) against naive
// references, and the in-place KV-cache write with a donated buffer.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "ops_testing.h"

namespace opstest {
namespace {

using radix::ScatterMode;
using T = std::vector<Tag>;

/// One row per data dtype: only the last `nData` inputs (data, updates) and the result take the
/// dtype; index inputs keep theirs.
std::vector<Case> perDataDtype(const Case& c, const std::vector<DType>& dtypes, size_t nData) {
  std::vector<Case> out;
  for (DType d : dtypes) {
    Case e = c;
    e.name += "_" + std::string(radix::name(d));
    for (size_t i = e.inputs.size() - nData; i < e.inputs.size(); ++i) e.inputs[i] = e.inputs[i].withDtype(d);
    e.out = e.out.withDtype(d);
    out.push_back(e);
  }
  return out;
}

/// Where gather's result axes come from: data axis k -> result axis (-1: indexed), index axis j ->
/// result axis. Inputs: the index tensors (one per entry of `indexed`), then the data.
struct Layout {
  std::vector<int> indexed;   // data axes, in the order of the index inputs
  std::vector<int> fromData;  // data axis k -> result axis, or -1
  std::vector<int> fromIndex; // index axis j -> result axis
};

/// Data coordinates of result coordinate `o`; `valid` is false when an index is out of range.
Dims dataCoords(const Layout& l, const std::vector<Host>& in, const Dims& o, bool clamp, bool& valid) {
  const Host& data = in.back();
  Dims at(data.dims.size());
  for (size_t k = 0; k < at.size(); ++k)
    if (l.fromData[k] >= 0) at[k] = o[l.fromData[k]];
  valid = true;
  for (size_t i = 0; i < l.indexed.size(); ++i) {
    Dims j;
    for (int r : l.fromIndex) j.push_back(o[r]);
    int64_t v = static_cast<int64_t>(in[i].v[offsetOf(in[i].dims, j)]);
    const int64_t dim = data.dims[l.indexed[i]];
    if (v < 0 || v >= dim) valid = false;
    at[l.indexed[i]] = clamp ? std::clamp<int64_t>(v, 0, dim - 1) : v;
  }
  return at;
}

Ref gatherRef(Layout l, Dims outDims) {
  return [=](const std::vector<Host>& in) {
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      bool valid;
      out.push_back(in.back().v[offsetOf(in.back().dims, dataCoords(l, in, o, true, valid))]);
    });
    return out;
  };
}

/// Inputs: index tensors, updates, data. Updates apply in row-major order; out of range ones are dropped.
Ref scatterRef(Layout l, ScatterMode mode) {
  return [=](const std::vector<Host>& in) {
    const Host& updates = in[in.size() - 2];
    Vals out = in.back().v;
    std::vector<Host> idx(in.begin(), in.end() - 2);
    idx.push_back(in.back());
    forEachIndex(updates.dims, [&](const Dims& o) {
      bool valid;
      const Dims at = dataCoords(l, idx, o, false, valid);
      if (!valid) return;
      double& x = out[offsetOf(in.back().dims, at)];
      const double u = updates.v[offsetOf(updates.dims, o)];
      x = mode == ScatterMode::add ? x + u : u;
    });
    return out;
  };
}

/// Inputs: starts, data. The result is starts' axes (fromStarts, coord axis -1) then data axes (fromData).
Ref gatherSlicesRef(std::vector<int> sliced, Dims sizes, int coord, std::vector<int> fromStarts, std::vector<int> fromData,
                    Dims outDims) {
  return [=](const std::vector<Host>& in) {
    const Host &starts = in[0], &data = in[1];
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims s(starts.dims.size());
      for (size_t j = 0; j < s.size(); ++j)
        if (static_cast<int>(j) != coord) s[j] = o[fromStarts[j]];
      Dims at(data.dims.size());
      for (size_t k = 0; k < at.size(); ++k) at[k] = o[fromData[k]];
      for (size_t i = 0; i < sliced.size(); ++i) {
        s[coord] = static_cast<int64_t>(i);
        const int64_t start = static_cast<int64_t>(starts.v[offsetOf(starts.dims, s)]);
        at[sliced[i]] += std::clamp<int64_t>(start, 0, data.dims[sliced[i]] - sizes[i]);
      }
      out.push_back(data.v[offsetOf(data.dims, at)]);
    });
    return out;
  };
}

/// Inputs: one scalar start per entry of `axes`, then the data.
Ref dynamicSliceRef(std::vector<int> axes, Dims lens) {
  return [=](const std::vector<Host>& in) {
    const Host& data = in.back();
    Dims start(data.dims.size(), 0), outDims = data.dims;
    for (size_t i = 0; i < axes.size(); ++i) {
      outDims[axes[i]] = lens[i];
      start[axes[i]] = std::clamp<int64_t>(static_cast<int64_t>(in[i].v[0]), 0, data.dims[axes[i]] - lens[i]);
    }
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims at = o;
      for (size_t k = 0; k < at.size(); ++k) at[k] += start[k];
      out.push_back(data.v[offsetOf(data.dims, at)]);
    });
    return out;
  };
}

/// Inputs: one scalar offset per entry of `axes`, the update, then the data.
Ref dynamicUpdateSliceRef(std::vector<int> axes) {
  return [=](const std::vector<Host>& in) {
    const Host &update = in[in.size() - 2], &data = in.back();
    Dims start(data.dims.size(), 0);
    for (size_t i = 0; i < axes.size(); ++i)
      start[axes[i]] = std::clamp<int64_t>(static_cast<int64_t>(in[i].v[0]), 0, data.dims[axes[i]] - update.dims[axes[i]]);
    Vals out = data.v;
    forEachIndex(update.dims, [&](const Dims& o) {
      Dims at = o;
      for (size_t k = 0; k < at.size(); ++k) at[k] += start[k];
      out[offsetOf(data.dims, at)] = update.v[offsetOf(update.dims, o)];
    });
    return out;
  };
}

const DType i32 = DType::i32, i64 = DType::i64, u8 = DType::u8;

std::vector<Case> indexCases() {
  const std::vector<DType> all = {DType::f32, DType::f16, DType::bf16, DType::i32};
  const std::vector<DType> floats = kFloats;
  std::vector<Case> rows;
  auto add = [&](const Case& c, const std::vector<DType>& dtypes, size_t nData = 1) {
    for (Case& e : perDataDtype(c, dtypes, nData)) rows.push_back(std::move(e));
  };
  // gather: embedding lookup; ids out of range clamp.
  add({"gather_embedding", {sh({5}, {"s"}, i32), sh({7, 3}, {"voc", "d"})}, [](const Ts& x) { return x[1].gather({{"voc", x[0]}}); },
       gatherRef({{0}, {-1, 1}, {0}}, {5, 3}), sh({5, 3}, T{"s", "d"}), {}, -2, 2, {{3, 0, 6, 3, 1}}},
      all);
  add({"gather_clamped", {sh({6}, {"s"}, i32), sh({7, 3}, {"voc", "d"})}, [](const Ts& x) { return x[1].gather({{"voc", x[0]}}); },
       gatherRef({{0}, {-1, 1}, {0}}, {6, 3}), sh({6, 3}, T{"s", "d"}), {}, -2, 2, {{-1, 7, 100, -100, 6, 0}}},
      floats);
  // The index axes replace the indexed axis in the middle; untagged index axes.
  add({"gather_middle_2d_index", {sh({2, 3}, i64), sh({3, 17, 5})}, [](const Ts& x) { return x[1].gather({{1, x[0]}}); },
       gatherRef({{1}, {0, -1, 3}, {1, 2}}, {3, 2, 3, 5}), sh({3, 2, 3, 5}), {}, -2, 2, {{16, 0, 3, 9, 1, 2}}},
      floats);
  // Batched: the index's "b" axis batches x's "b".
  add({"gather_batched", {sh({2, 4}, {"b", "k"}, i32), sh({2, 9, 3}, {"b", "s", "d"})}, [](const Ts& x) { return x[1].gather({{"s", x[0]}}); },
       gatherRef({{1}, {0, -1, 2}, {0, 1}}, {2, 4, 3}), sh({2, 4, 3}, T{"b", "k", "d"}), {}, -2, 2, {{8, 0, 4, 4, 1, 1, 7, 2}}},
      all);
  // Two indexed axes at once; index in u8; the index axis lands where the first indexed axis was.
  add({"gather_two_axes", {sh({4}, {"n"}, u8), sh({4}, {"n"}, i32), sh({3, 5, 7}, {"a", "b", "c"})},
       [](const Ts& x) { return x[2].gather({{"c", x[0]}, {"a", x[1]}}); },
       gatherRef({{2, 0}, {-1, 1, -1}, {0}}, {4, 5}), sh({4, 5}, T{"n", "b"}), {}, -2, 2, {{6, 0, 3, 200}, {2, 0, 1, -5}}},
      all);
  add({"gather_scalar_index", {sh({}, i32), sh({7, 3}, {"voc", "d"})}, [](const Ts& x) { return x[1].gather({{"voc", x[0]}}); },
       gatherRef({{0}, {-1, 0}, {}}, {3}), sh({3}, T{"d"}), {}, -2, 2, {{4}}},
      floats);

  add({"gather_empty_ids", {sh({0}, {"s"}, i32), sh({7, 3}, {"voc", "d"})}, [](const Ts& x) { return x[1].gather({{"voc", x[0]}}); },
       gatherRef({{0}, {-1, 1}, {0}}, {0, 3}), sh({0, 3}, T{"s", "d"}), {}, -2, 2, {{}}},
      floats);

  // gatherSlices: starts {n, coord}; the result is {n, sliced x}.
  add({"gatherSlices", {sh({4, 1}, {"n", "coord"}, i32), sh({9, 3}, {"s", "d"})}, [](const Ts& x) { return x[1].gatherSlices({{"s", 3}}, x[0]); },
       gatherSlicesRef({0}, {3}, 1, {0, -1}, {1, 2}, {4, 3, 3}), sh({4, 3, 3}, T{"n", "s", "d"}), {}, -2, 2, {{0, 6, 8, -4}}},
      all);
  add({"gatherSlices_two_axes", {sh({3, 2}, i32), sh({7, 5, 2})}, [](const Ts& x) { return x[1].gatherSlices({{0, 2}, {1, 4}}, x[0]); },
       gatherSlicesRef({0, 1}, {2, 4}, 1, {0, -1}, {1, 2, 3}, {3, 2, 4, 2}), sh({3, 2, 4, 2}), {}, -2, 2, {{1, 1, 6, 0, -2, 9}}},
      floats);
  add({"gatherSlices_batched", {sh({2, 3, 1}, {"b", "n", "coord"}, i32), sh({2, 9, 3}, {"b", "s", "d"})},
       [](const Ts& x) { return x[1].gatherSlices({{"s", 2}}, x[0]); },
       gatherSlicesRef({1}, {2}, 2, {1, 0, -1}, {1, 2, 3}, {3, 2, 2, 3}), sh({3, 2, 2, 3}, T{"n", "b", "s", "d"}), {}, -2, 2, {{0, 3, 8, 7, 1, 5}}},
      floats);

  // scatter: duplicates add up; replace keeps the last in row-major order; out of range dropped.
  add({"scatter_add_duplicates", {sh({6}, {"s"}, i32), sh({6, 3}, {"s", "d"}), sh({5, 3}, {"voc", "d"})},
       [](const Ts& x) { return x[2].scatter({{"voc", x[0]}}, x[1], ScatterMode::add); },
       scatterRef({{0}, {-1, 1}, {0}}, ScatterMode::add), sh({5, 3}, T{"voc", "d"}), {}, -2, 2, {{0, 2, 0, 4, 2, 0}}},
      {DType::f32, DType::f16, DType::i32}, 2);
  add({"scatter_replace_duplicates", {sh({6}, {"s"}, i32), sh({6, 3}, {"s", "d"}), sh({5, 3}, {"voc", "d"})},
       [](const Ts& x) { return x[2].scatter({{"voc", x[0]}}, x[1], ScatterMode::replace); },
       scatterRef({{0}, {-1, 1}, {0}}, ScatterMode::replace), sh({5, 3}, T{"voc", "d"}), {}, -2, 2, {{0, 2, 0, 4, 2, 0}}},
      all, 2);
  add({"scatter_out_of_range_dropped", {sh({4}, i32), sh({4, 3}), sh({5, 3})},
       [](const Ts& x) { return x[2].scatter({{0, x[0]}}, x[1], ScatterMode::add); },
       scatterRef({{0}, {-1, 1}, {0}}, ScatterMode::add), sh({5, 3}), {}, -2, 2, {{-1, 5, 1, 100}}},
      floats, 2);
  add({"scatter_batched_two_axes", {sh({2, 3}, {"b", "n"}, i32), sh({2, 3}, {"b", "n"}, i32), sh({2, 3}, {"b", "n"}), sh({2, 4, 5}, {"b", "r", "c"})},
       [](const Ts& x) { return x[3].scatter({{"r", x[0]}, {"c", x[1]}}, x[2], ScatterMode::add); },
       scatterRef({{1, 2}, {0, -1, -1}, {0, 1}}, ScatterMode::add), sh({2, 4, 5}, T{"b", "r", "c"}), {}, -2, 2,
       {{3, 3, 0, 1, 2, 1}, {4, 4, 0, 0, 9, 1}}},
      {DType::f32, DType::bf16, DType::i32}, 2);

  add({"scatter_no_updates", {sh({0}, i32), sh({0, 3}), sh({5, 3})},
       [](const Ts& x) { return x[2].scatter({{0, x[0]}}, x[1], ScatterMode::replace); },
       scatterRef({{0}, {-1, 1}, {0}}, ScatterMode::replace), sh({5, 3}), {}, -2, 2, {{}}},
      floats, 2);

  // dynamicSlice / dynamicUpdateSlice: offsets clamp into [0, dim - len].
  add({"dynamicSlice", {sh({}, i32), sh({9, 3}, {"s", "d"})}, [](const Ts& x) { return x[1].dynamicSlice({{"s", {.start = x[0], .len = 2}}}); },
       dynamicSliceRef({0}, {2}), sh({2, 3}, T{"s", "d"}), {}, -2, 2, {{4}}},
      all);
  add({"dynamicSlice_clamped_high", {sh({}, i32), sh({9, 3})}, [](const Ts& x) { return x[1].dynamicSlice1d(0, {.start = x[0], .len = 3}); },
       dynamicSliceRef({0}, {3}), sh({3, 3}), {}, -2, 2, {{8}}},
      floats);
  add({"dynamicSlice_two_axes_negative", {sh({}, i64), sh({}, i32), sh({5, 7, 3})},
       [](const Ts& x) { return x[2].dynamicSlice({{1, {.start = x[0], .len = 4}}, {0, {.start = x[1], .len = 1}}}); },
       dynamicSliceRef({1, 0}, {4, 1}), sh({1, 4, 3}), {}, -2, 2, {{-3}, {4}}},
      floats);
  add({"dynamicUpdateSlice", {sh({}, i32), sh({1, 2, 3}, {"s", "h", "d"}), sh({9, 2, 3}, {"s", "h", "d"})},
       [](const Ts& x) { return x[2].dynamicUpdateSlice({{"s", x[0]}}, x[1]); },
       dynamicUpdateSliceRef({0}), sh({9, 2, 3}, T{"s", "h", "d"}), {}, -2, 2, {{5}}},
      all, 2);
  add({"dynamicUpdateSlice1d_middle_axis", {sh({}, i32), sh({2, 1, 3}, {"h", "s", "d"}), sh({2, 7, 3}, {"h", "s", "d"})},
       [](const Ts& x) { return x[2].dynamicUpdateSlice1d("s", x[0], x[1]); },
       dynamicUpdateSliceRef({1}), sh({2, 7, 3}, T{"h", "s", "d"}), {}, -2, 2, {{6}}},
      floats, 2);
  add({"dynamicUpdateSlice_clamped", {sh({}, i32), sh({}, u8), sh({3, 4}), sh({7, 5})},
       [](const Ts& x) { return x[3].dynamicUpdateSlice({{0, x[0]}, {1, x[1]}}, x[2]); },
       dynamicUpdateSliceRef({0, 1}), sh({7, 5}), {}, -2, 2, {{-4}, {200}}},
      floats, 2);
  return rows;
}

std::vector<ErrorCase> errorCases() {
  const DType f32 = DType::f32;
  auto gatherVoc = [](const Ts& x) { return x[0].gather({{"voc", x[1]}}); };
  return {
      {"gather_float_index", {sh({7, 3}, {"voc", "d"}), sh({5}, f32)}, gatherVoc, "[gather]", "index tensor {5}:f32 for axis \"voc\" of {voc=7,d=3}:f32 is not of an integer dtype"},
      {"gather_axis", {sh({7, 3}, {"v", "d"}), sh({5}, i32)}, gatherVoc, "[gather]", "no axis tagged \"voc\" in {v=7,d=3}:f32"},
      {"gather_none", {sh({7, 3})}, [](const Ts& x) { return x[0].gather({}); }, "[gather]", "no index tensors for {7,3}:f32"},
      {"gather_twice", {sh({7, 3}), sh({5}, i32)}, [](const Ts& x) { return x[0].gather({{0, x[1]}, {-2, x[1]}}); }, "[gather]", "axis -2 of {7,3}:f32 is indexed twice"},
      {"gather_index_shapes", {sh({7, 3}), sh({5}, i32), sh({4}, i32)}, [](const Ts& x) { return x[0].gather({{0, x[1]}, {1, x[2]}}); }, "[gather]", "index tensors differ: {5}:i32 and {4}:i32"},
      {"gather_batch_dims", {sh({2, 7}, {"b", "s"}), sh({3, 5}, {"b", "k"}, i32)}, [](const Ts& x) { return x[0].gather({{"s", x[1]}}); }, "[gather]", "batch axis \"b\" differs: {b=2,s=7}:f32 and index {b=3,k=5}:i32"},
      {"gather_index_tag_is_indexed", {sh({7, 3}, {"voc", "d"}), sh({5}, {"voc"}, i32)}, gatherVoc, "[gather]", "index axis \"voc\" of {voc=5}:i32 is also an indexed axis of {voc=7,d=3}:f32"},
      {"gather_empty_axis", {sh({0, 3}), sh({5}, i32)}, [](const Ts& x) { return x[0].gather({{0, x[1]}}); }, "[gather]", "can't index axis 0 of {0,3}:f32: it is empty"},
      {"gatherSlices_float", {sh({9, 3}), sh({4, 1}, f32)}, [](const Ts& x) { return x[0].gatherSlices({{0, 2}}, x[1]); }, "[gatherSlices]", "starts {4,1}:f32 are not of an integer dtype"},
      {"gatherSlices_coords", {sh({9, 3}), sh({4, 2}, i32)}, [](const Ts& x) { return x[0].gatherSlices({{0, 2}}, x[1]); }, "[gatherSlices]", "starts {4,2}:i32 hold 2 coordinates for 1 sliced axes of {9,3}:f32"},
      {"gatherSlices_size", {sh({9, 3}), sh({4, 1}, i32)}, [](const Ts& x) { return x[0].gatherSlices({{1, 4}}, x[1]); }, "[gatherSlices]", "slice size 4 for axis 1 of {9,3}:f32 is out of range"},
      {"gatherSlices_axis", {sh({9, 3}), sh({4, 1}, i32)}, [](const Ts& x) { return x[0].gatherSlices({{2, 1}}, x[1]); }, "[gatherSlices]", "axis 2 out of range for {9,3}:f32"},
      {"scatter_updates_shape", {sh({5, 3}, {"voc", "d"}), sh({4}, {"s"}, i32), sh({4, 2}, {"s", "d"})},
       [](const Ts& x) { return x[0].scatter({{"voc", x[1]}}, x[2], ScatterMode::add); }, "[scatter]", "updates {s=4,d=2}:f32 must have the shape {s=4,d=3}:f32"},
      {"scatter_updates_tags", {sh({5, 3}, {"voc", "d"}), sh({4}, {"s"}, i32), sh({4, 3}, {"s", "k"})},
       [](const Ts& x) { return x[0].scatter({{"voc", x[1]}}, x[2], ScatterMode::add); }, "[scatter]", "tags differ at axis 1"},
      {"scatter_updates_dtype", {sh({5, 3}), sh({4}, i32), sh({4, 3}, DType::f16)},
       [](const Ts& x) { return x[0].scatter({{0, x[1]}}, x[2], ScatterMode::replace); }, "[scatter]", "updates {4,3}:f16 must have the shape {4,3}:f32"},
      {"scatter_float_index", {sh({5, 3}), sh({4}, f32), sh({4, 3})},
       [](const Ts& x) { return x[0].scatter({{0, x[1]}}, x[2], ScatterMode::add); }, "[scatter]", "index tensor {4}:f32 for axis 0 of {5,3}:f32 is not of an integer dtype"},
      {"scatter_axis", {sh({5, 3}), sh({4}, i32), sh({4, 3})},
       [](const Ts& x) { return x[0].scatter({{"v", x[1]}}, x[2], ScatterMode::add); }, "[scatter]", "no axis tagged \"v\" in {5,3}:f32"},
      {"dynamicSlice_float_start", {sh({9, 3}), sh({}, f32)}, [](const Ts& x) { return x[0].dynamicSlice({{0, {.start = x[1], .len = 2}}}); }, "[dynamicSlice]", "offset for axis 0 of {9,3}:f32 must be a scalar integer tensor, not {}:f32"},
      {"dynamicSlice_not_scalar", {sh({9, 3}), sh({1}, i32)}, [](const Ts& x) { return x[0].dynamicSlice({{0, {.start = x[1], .len = 2}}}); }, "[dynamicSlice]", "must be a scalar integer tensor, not {1}:i32"},
      {"dynamicSlice_len", {sh({9, 3}), sh({}, i32)}, [](const Ts& x) { return x[0].dynamicSlice({{1, {.start = x[1], .len = 4}}}); }, "[dynamicSlice]", "length 4 for axis 1 of {9,3}:f32 is out of range"},
      {"dynamicSlice1d_axis", {sh({9, 3}), sh({}, i32)}, [](const Ts& x) { return x[0].dynamicSlice1d("s", {.start = x[1], .len = 1}); }, "[dynamicSlice1d]", "no axis tagged \"s\" in {9,3}:f32"},
      {"dynamicUpdateSlice_tags", {sh({9, 3}, {"s", "d"}), sh({}, i32), sh({1, 3}, {"s", "k"})},
       [](const Ts& x) { return x[0].dynamicUpdateSlice({{"s", x[1]}}, x[2]); }, "[dynamicUpdateSlice]", "tags differ at axis 1: {s=9,d=3}:f32 and update {s=1,k=3}:f32"},
      {"dynamicUpdateSlice_larger", {sh({9, 3}), sh({}, i32), sh({1, 4})},
       [](const Ts& x) { return x[0].dynamicUpdateSlice({{0, x[1]}}, x[2]); }, "[dynamicUpdateSlice]", "update {1,4}:f32 is larger than {9,3}:f32 at axis 1"},
      {"dynamicUpdateSlice_rank", {sh({9, 3}), sh({}, i32), sh({3})},
       [](const Ts& x) { return x[0].dynamicUpdateSlice({{0, x[1]}}, x[2]); }, "[dynamicUpdateSlice]", "update {3}:f32 does not fit into {9,3}:f32"},
      {"dynamicUpdateSlice1d_axis", {sh({9, 3}), sh({}, i32), sh({1, 3})},
       [](const Ts& x) { return x[0].dynamicUpdateSlice1d(2, x[1], x[2]); }, "[dynamicUpdateSlice1d]", "axis 2 out of range for {9,3}:f32"},
      {"dynamicUpdateSlice_float_offset", {sh({9, 3}), sh({}, f32), sh({1, 3})},
       [](const Ts& x) { return x[0].dynamicUpdateSlice({{0, x[1]}}, x[2]); }, "[dynamicUpdateSlice]", "offset for axis 0 of {9,3}:f32 must be a scalar integer tensor, not {}:f32"},
  };
}

}  // namespace

RADIX_OPS_CASES("index", indexCases);
RADIX_OPS_ERRORS(errorCases);

/// The IR of `fn` after bufferization (compiled with a dump folder, no cache).
template <class F, class... Args>
std::string bufferizedIr(const F& fn, const Args&... args) {
  const std::filesystem::path dump = std::filesystem::path(::testing::TempDir()) / "radix_ops_index_ir";
  std::filesystem::remove_all(dump);
  radix::CompileOptions options = cpu().options();
  options.cache = false;
  options.dumpDir = dump.string();
  options.dumpPasses = true;
  options.dumpPassRegex = "^convert-bufferization-to-memref$";
  radix::compile(cpu().withOptions(options), fn, args...);
  std::string ir;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dump))
    if (entry.path().filename().string().ends_with("convert-bufferization-to-memref.mlir")) {
      std::ifstream in(entry.path());
      ir.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  std::filesystem::remove_all(dump);
  return ir;
}

/// Writes kv into a donated cache at pos 5 of "s"; checks the IR writes the cache argument's own
/// buffer (`writes`) and allocates no cache-sized buffer, then runs it.
void checkCacheWrite(const Shape& cacheShape, const Shape& kvShape, const std::string& writes) {
  Vals zeros(cacheShape.count(), 0), kv(kvShape.count());
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = static_cast<double>(i + 1);
  Tensor cache = Tensor::fromValues(cpu(), cacheShape, zeros);
  const Tensor update = Tensor::fromValues(cpu(), kvShape, kv);
  const Tensor pos = Tensor::fromValues(cpu(), sh({}, DType::i32), std::vector<int32_t>{5});
  auto write = [](const Tensor& cache, const Tensor& kv, const Tensor& pos) {
    return cache.dynamicUpdateSlice({{"s", pos}}, kv).reuseBuffer(cache);
  };
  const std::string ir = bufferizedIr(write, cache, update, pos);
  ASSERT_NE(ir, "") << "no IR dumped";
  // (The copy of the result into its out-parameter is still here; the compiler drops it next,
  // since the runtime passes the argument's own buffer there: Module.DonatedCacheWriteHasNoFullSizeCopy.)
  EXPECT_NE(ir.find(writes), std::string::npos) << ir;
  std::string cacheType = "memref<";
  for (int64_t d : cacheShape.dims()) cacheType += std::to_string(d) + "x";
  std::istringstream lines(ir);
  for (std::string line; std::getline(lines, line);)
    if (line.find("memref.alloc") != std::string::npos) EXPECT_EQ(line.find(cacheType), std::string::npos) << line << "\n" << ir;

  const void* address = cache.bufferAddress();
  Tensor result = radix::testing::compileAndCall(cpu(), write, cache, update, pos);
  EXPECT_EQ(result.bufferAddress(), address);
  ASSERT_EQ(result.shape(), cacheShape);
  Vals expected = zeros;
  const int64_t s = cacheShape.hasTag("s");
  forEachIndex(kvShape.dims(), [&](const Dims& o) {
    Dims at = o;
    at[s] += 5;
    expected[offsetOf(cacheShape.dims(), at)] = kv[offsetOf(kvShape.dims(), o)];
  });
  EXPECT_EQ(result.toVector<double>(), expected);
}

// The KV-cache write: with the cache donated, the update lands in the cache's own buffer.
TEST(OpsIndex, DynamicUpdateSliceWritesDonatedCacheInPlace) {
  // A contiguous window: a copy into a view of the cache argument.
  checkCacheWrite(sh({16, 2, 3}, {"s", "h", "d"}), sh({1, 2, 3}, {"s", "h", "d"}), "memref.subview %arg0[");
}

TEST(OpsIndex, DynamicUpdateSliceWritesDonatedCacheInPlaceStrided) {
  // A strided window: a strided copy into a view of the cache argument (memrefCopy).
  checkCacheWrite(sh({2, 16, 3}, {"h", "s", "d"}), sh({2, 1, 3}, {"h", "s", "d"}), "memref.subview %arg0[");
}

// gather is one linalg.generic that reads the table with tensor.extract (no loops, no copies).
TEST(OpsIndex, GatherIsOneGenericWithTensorExtract) {
  auto fn = [](const Tensor& table, const Tensor& ids) { return table.gather({{"voc", ids}}); };
  const radix::Exe exe = radix::compile(cpu(), fn, Tensor(sh({50, 8}, {"voc", "d"})), Tensor(sh({5}, {"s"}, DType::i32)));
  const std::string ir = exe.mlir();
  EXPECT_NE(ir.find("linalg.generic"), std::string::npos) << ir;
  EXPECT_NE(ir.find("tensor.extract %arg0["), std::string::npos) << ir;
  EXPECT_EQ(ir.find("scf.for"), std::string::npos) << ir;
  EXPECT_EQ(exe.signature().resultShapes.at(0), sh({5, 8}, {"s", "d"}));
}

// scatter into a donated argument compiles (its loops write fresh buffers) and lands in it.
TEST(OpsIndex, ScatterIntoDonatedArgument) {
  Tensor x = Tensor::fromValues(cpu(), sh({5, 3}), Vals(15, 1.0));
  const Tensor ids = Tensor::fromValues(cpu(), sh({3}, DType::i32), std::vector<int32_t>{1, 4, 1});
  const Tensor u = Tensor::fromValues(cpu(), sh({3, 3}), Vals{1, 2, 3, 4, 5, 6, 7, 8, 9});
  const void* address = x.bufferAddress();
  auto fn = [](const Tensor& x, const Tensor& ids, const Tensor& u) {
    return x.scatter({{0, ids}}, u, ScatterMode::add).reuseBuffer(x);
  };
  Tensor y = radix::testing::compileAndCall(cpu(), fn, x, ids, u);
  EXPECT_EQ(y.bufferAddress(), address);
  EXPECT_EQ(y.toVector<double>(), (Vals{1, 1, 1, 9, 11, 13, 1, 1, 1, 1, 1, 1, 5, 6, 7}));
}

}  // namespace opstest


namespace opstest {

// The serial pipeline (threads = 1: convert-linalg-to-loops, no OpenMP) gives the same results as
// the parallel one for the ops of this family and of the more shape ops.
TEST(OpsIndex, SerialPipelineMatchesParallel) {
  radix::CompileOptions options = cpu().options();
  options.threads = 1;
  options.cache = false;
  const radix::Platform serial = cpu().withOptions(options);
  auto fn = [](const Tensor& table, const Tensor& ids, const Tensor& pos) {
    const Tensor g = table.gather({{"voc", ids}});                                        // {s=4,d=3}
    const Tensor s = table.scatter({{"voc", ids}}, g, ScatterMode::add);                  // {voc=7,d=3}
    const Tensor p = s.pad({{"d", {.low = -1, .high = 2, .interior = 1}}}, 0.5);          // {voc=7,d=6}
    const Tensor c = Tensor::concatenate({p, p.reverse({"voc"}).roll("d", 1)}, "voc");   // {voc=14,d=6}
    const Tensor d = c.dynamicSlice({{"voc", {.start = pos, .len = 5}}}).slice1d("d", {.start = 1, .step = 2});
    return d.dynamicUpdateSlice({{"voc", pos}}, d.slice1d("voc", {.end = 1}).repeat1d("d", 1));
  };
  const Tensor table = Tensor::fromValues(cpu(), sh({7, 3}, {"voc", "d"}), pseudoRandom(21, -2, 2, 7, false));
  const Tensor ids = Tensor::fromValues(cpu(), sh({4}, {"s"}, DType::i32), std::vector<int32_t>{6, 0, 6, 2});
  const Tensor pos = Tensor::fromValues(cpu(), sh({}, DType::i32), std::vector<int32_t>{3});
  const Tensor parallel = radix::testing::compileAndCall(cpu(), fn, table, ids, pos);
  const Tensor serialResult = radix::testing::compileAndCall(serial, fn, table, ids, pos);
  ASSERT_EQ(parallel.shape(), sh({5, 3}, {"voc", "d"}));
  EXPECT_EQ(serialResult.toVector<double>(), parallel.toVector<double>());
}

}  // namespace opstest
