#pragma once
// The op test table: naive C++ references, one row per case, and a registry that each family's
// test file adds its sections to (RADIX_OPS_CASES / RADIX_OPS_ERRORS). ops_testing.cpp runs them.
#include <radix/radix.h>
#include <radix/testing.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace opstest {


using radix::DType;
using radix::Shape;
using radix::Tag;
using radix::Tensor;

using Dims = std::vector<int64_t>;
using Vals = std::vector<double>;
using Ts = std::vector<Tensor>;
using Pairs = std::vector<std::pair<int, int>>;

inline const radix::Platform& cpu() {
  static const radix::Platform platform = radix::Platform::cpu();
  return platform;
}

inline Shape sh(const Dims& dims, DType dtype = DType::f32) { return Shape(dims, dtype); }
inline Shape sh(const Dims& dims, const std::vector<Tag>& tags, DType dtype = DType::f32) { return Shape(dims, dtype).withTags(tags); }

// ---- naive reference ----

/// An input as the reference sees it: values already rounded through the input's dtype.
struct Host {
  Vals v;
  Dims dims;
};
using Ref = std::function<Vals(const std::vector<Host>&)>;
using Op = std::function<Tensor(const Ts&)>;

inline int64_t countOf(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// Calls f(index) for every multi-index of `dims` in row-major order (once for rank 0).
template <class F>
inline void forEachIndex(const Dims& dims, F&& f) {
  Dims idx(dims.size(), 0);
  for (int64_t n = countOf(dims); n > 0; --n) {
    f(idx);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

/// Row-major offset of `idx`; size-1 axes (and rank 0) read element 0, which is broadcasting.
inline int64_t offsetOf(const Dims& dims, const Dims& idx) {
  int64_t o = 0;
  for (size_t i = 0; i < dims.size(); ++i) o = o * dims[i] + (dims[i] == 1 ? 0 : idx[i]);
  return o;
}

inline Ref map1(double (*f)(double)) {
  return [f](const std::vector<Host>& in) {
    Vals out;
    for (double x : in[0].v) out.push_back(f(x));
    return out;
  };
}

/// Binary elementwise with strict broadcasting: a scalar side, or equal rank with size-1 axes.
inline Ref map2(double (*f)(double, double)) {
  return [f](const std::vector<Host>& in) {
    const Host &a = in[0], &b = in[1];
    Dims dims = a.dims.size() >= b.dims.size() ? a.dims : b.dims;
    if (a.dims.size() == b.dims.size())
      for (size_t i = 0; i < dims.size(); ++i) dims[i] = std::max(a.dims[i], b.dims[i]);
    Vals out;
    forEachIndex(dims, [&](const Dims& i) { out.push_back(f(a.v[offsetOf(a.dims, i)], b.v[offsetOf(b.dims, i)])); });
    return out;
  };
}

/// Result axes: batching pairs, then lhs free axes, then rhs free axes (all in input order).
inline Ref dotRef(Pairs contracting, Pairs batching) {
  return [=](const std::vector<Host>& in) {
    const Host &a = in[0], &b = in[1];
    auto isFree = [&](int axis, bool lhs) {
      for (const Pairs* ps : {&contracting, &batching})
        for (auto [i, j] : *ps)
          if ((lhs ? i : j) == axis) return false;
      return true;
    };
    Dims outDims, sumDims;
    std::vector<int> freeA, freeB;
    for (auto [i, j] : batching) outDims.push_back(a.dims[i]);
    for (int i = 0; i < static_cast<int>(a.dims.size()); ++i)
      if (isFree(i, true)) freeA.push_back(i), outDims.push_back(a.dims[i]);
    for (int j = 0; j < static_cast<int>(b.dims.size()); ++j)
      if (isFree(j, false)) freeB.push_back(j), outDims.push_back(b.dims[j]);
    for (auto [i, j] : contracting) sumDims.push_back(a.dims[i]);
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims ia(a.dims.size()), ib(b.dims.size());
      size_t k = 0;
      for (auto [i, j] : batching) ia[i] = ib[j] = o[k++];
      for (int i : freeA) ia[i] = o[k++];
      for (int j : freeB) ib[j] = o[k++];
      double s = 0;
      forEachIndex(sumDims, [&](const Dims& c) {
        for (size_t n = 0; n < contracting.size(); ++n) ia[contracting[n].first] = ib[contracting[n].second] = c[n];
        s += a.v[offsetOf(a.dims, ia)] * b.v[offsetOf(b.dims, ib)];
      });
      out.push_back(s);
    });
    return out;
  };
}

/// Axis i of the input lands on axis axes[i] of `outDims`.
inline Ref broadcastRef(Dims outDims, Dims axes) {
  return [=](const std::vector<Host>& in) {
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims i(axes.size());
      for (size_t k = 0; k < axes.size(); ++k) i[k] = o[axes[k]];
      out.push_back(in[0].v[offsetOf(in[0].dims, i)]);
    });
    return out;
  };
}

/// Result axis i is input axis perm[i].
inline Ref transposeRef(Dims perm) {
  return [=](const std::vector<Host>& in) {
    Dims outDims;
    for (int64_t p : perm) outDims.push_back(in[0].dims[p]);
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims i(perm.size());
      for (size_t k = 0; k < perm.size(); ++k) i[perm[k]] = o[k];
      out.push_back(in[0].v[offsetOf(in[0].dims, i)]);
    });
    return out;
  };
}

inline Ref reduceRef(int axis, bool isMax) {
  return [=](const std::vector<Host>& in) {
    Dims outDims = in[0].dims;
    outDims[axis] = 1;
    Vals out;
    forEachIndex(outDims, [&](const Dims& o) {
      Dims i = o;
      double acc = isMax ? -INFINITY : 0;
      for (i[axis] = 0; i[axis] < in[0].dims[axis]; ++i[axis]) {
        const double x = in[0].v[offsetOf(in[0].dims, i)];
        acc = isMax ? std::max(acc, x) : acc + x;
      }
      out.push_back(acc);
    });
    return out;
  };
}

inline Ref sameValues() {
  return [](const std::vector<Host>& in) { return in[0].v; };
}

inline Ref filledWith(int64_t n, double value) {
  return [=](const std::vector<Host>&) { return Vals(n, value); };
}

/// The values as `dtype` holds them (round-to-nearest through a device buffer).
inline Vals roundedTo(DType dtype, const Vals& v) {
  return Tensor::fromValues(cpu(), Shape({static_cast<int64_t>(v.size())}, dtype), v).toVector<double>();
}

inline Ref roundedTo(DType dtype) {
  return [=](const std::vector<Host>& in) { return roundedTo(dtype, in[0].v); };
}

// ---- cases ----

/// One op on some inputs, checked against `ref`. With `dtypes`, the case runs once per dtype,
/// which replaces the dtype of every input and of `out`.
struct Case {
  std::string name;
  std::vector<Shape> inputs;
  Op op;
  Ref ref;
  Shape out;                 // expected result shape, tags and dtype included
  std::vector<DType> dtypes;  // empty: shapes as written
  double lo = -2, hi = 2;     // range of the pseudo-random inputs (floored for integer dtypes)
  std::vector<Vals> given = {};  // fixed inputs instead of pseudo-random ones
  double tol = -1;            // < 0: by the result dtype
  std::string group = {};     // set by allCases: the cases that compile together
};

// GoogleTest prints parameters on failure; the name says it all.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

inline double tolFor(DType d) {
  switch (d) {
    case DType::f32: return 1e-5;
    case DType::f16: return 2e-3;
    case DType::bf16: return 2e-2;
    default: return 0;
  }
}

/// A small LCG, so that every run (and every machine) sees the same inputs.
inline Vals pseudoRandom(int64_t n, double lo, double hi, uint32_t seed, bool integral) {
  Vals v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (double& x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (hi - lo) * ((s >> 8) / 16777216.0);
    if (integral) x = std::floor(x);
  }
  return v;
}

inline const std::vector<DType> kFloats = {DType::f32, DType::f16, DType::bf16};

inline std::string dimsName(const Shape& s) {
  if (s.rank() == 0) return "scalar";
  std::string out;
  for (int64_t i = 0; i < s.rank(); ++i) out += (i ? "x" : "") + std::to_string(s.dim(i));
  return out;
}

struct NamedOp1 {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*ref)(double);
  double lo, hi;
};

struct NamedOp2 {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
  double lo, hi;
};


// Ops with their arguments bound, so that a case row stays one line.
inline Op dotGeneralOp(std::vector<radix::AxisPair> c, std::vector<radix::AxisPair> b) {
  return [=](const Ts& x) { return x[0].dotGeneral(x[1], c, b); };
}
inline Op dotGeneralAsOp(std::vector<radix::AxisPair> c, std::vector<radix::AxisPair> b, DType result) {
  return [=](const Ts& x) { return x[0].dotGeneral(x[1], c, b, result); };
}
inline Op dotOp(std::vector<Tag> tags) { return [=](const Ts& x) { return x[0].dot(x[1], tags); }; }
inline Op broadOp(Shape to) { return [=](const Ts& x) { return x[0].broad(to); }; }
inline Op broadcastOp(Shape to, Dims axes) { return [=](const Ts& x) { return x[0].broadcast(to, axes); }; }
inline Op reshapeOp(Dims dims) { return [=](const Ts& x) { return x[0].reshape(dims); }; }
inline Op transposeOp(std::vector<radix::Axis> perm) { return [=](const Ts& x) { return x[0].transpose(perm); }; }
inline Op sumOp(radix::Axis a) { return [=](const Ts& x) { return x[0].sum(a); }; }
inline Op maxOp(radix::Axis a) { return [=](const Ts& x) { return x[0].max(a); }; }

// ---- errors ----

/// Runs `f`, expecting a radix::Error whose message starts with `prefix` and contains `part`.
template <class F>
inline void expectError(F&& f, const std::string& prefix, const std::string& part) {
  try {
    f();
  } catch (const radix::Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.starts_with(prefix)) << "message: " << what << "\nexpected prefix: " << prefix;
    EXPECT_NE(what.find(part), std::string::npos) << "message: " << what << "\nexpected to contain: " << part;
    return;
  }
  ADD_FAILURE() << "no radix::Error thrown; expected " << prefix << " ... " << part;
}

struct ErrorCase {
  std::string name;
  std::vector<Shape> inputs;
  Op op;
  std::string prefix;  // "[add]"
  std::string part;    // names the shapes, the axis or the tag
};

inline void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

/// Adds a section of cases (run once per dtype of each row); returns true (for static registration).
bool registerCases(const char* section, std::vector<Case> (*rows)());
/// Adds a list of error cases.
bool registerErrors(std::vector<ErrorCase> (*rows)());
/// Every registered error case (the Hardening suite runs each in a forked child too).
std::vector<ErrorCase> allErrorCases();
/// Every case, one per dtype of its row; the cases of one section and dtype form a group (and
/// compile together). allCases().size() -> 1728
std::vector<Case> allCases();
/// Input `i` of `c`, the k-th case of its group: its given values, else pseudo-random ones in
/// [lo, hi) (floored for integers) seeded by k and i.
inline Vals caseInput(const Case& c, size_t k, size_t i) {
  const Shape& s = c.inputs[i];
  return i < c.given.size() ? c.given[i]
                            : pseudoRandom(s.count(), c.lo, c.hi, static_cast<uint32_t>(k * 8 + i + 1), !radix::isFloat(s.dtype()));
}

}  // namespace opstest

#define RADIX_OPS_CAT2(a, b) a##b
#define RADIX_OPS_CAT(a, b) RADIX_OPS_CAT2(a, b)
/// RADIX_OPS_CASES("unary", unaryCases); at namespace scope in a test file.
#define RADIX_OPS_CASES(section, rows) \
  [[maybe_unused]] static const bool RADIX_OPS_CAT(radixOpsCases, __LINE__) = ::opstest::registerCases(section, rows)
/// RADIX_OPS_ERRORS(errorCases);
#define RADIX_OPS_ERRORS(rows) \
  [[maybe_unused]] static const bool RADIX_OPS_CAT(radixOpsErrors, __LINE__) = ::opstest::registerErrors(rows)
