// Random numbers (radix::Rng, Philox4x32-10 of Random123) and token sampling. A draw is one
// linalg.generic over the flattened result: element e takes w consecutive words of the Philox
// stream (w = 1, 2 or 4, so they come from one block), computes the block in integer arith and
// turns the words into its value. The state advances by the number of blocks used.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "llvm/ADT/APFloat.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "ops/common.h"
#include "radix/random.h"

namespace radix {

using namespace ops;

namespace {

using mlir::arith::CmpFPredicate;
using mlir::arith::CmpIPredicate;

// Random123's Philox4x32 constants.
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;

mlir::Value i32Const(mlir::OpBuilder& b, mlir::Location loc, uint32_t v) {
  return mlir::arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
}
mlir::Value i64Const(mlir::OpBuilder& b, mlir::Location loc, int64_t v) {
  return mlir::arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
}
mlir::Value floatConst(mlir::OpBuilder& b, mlir::Location loc, mlir::Type t, double v) {
  return mlir::arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
}
mlir::Value wide(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x) {
  return mlir::arith::ExtUIOp::create(b, loc, b.getI64Type(), x);
}
mlir::Value narrow(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x) {
  return mlir::arith::TruncIOp::create(b, loc, b.getI32Type(), x);
}
mlir::Value high(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x64) {
  return narrow(b, loc, mlir::arith::ShRUIOp::create(b, loc, x64, i64Const(b, loc, 32)));
}
/// lo | hi << 32
mlir::Value join(mlir::OpBuilder& b, mlir::Location loc, mlir::Value lo, mlir::Value hi) {
  return mlir::arith::OrIOp::create(b, loc, wide(b, loc, lo),
                                    mlir::arith::ShLIOp::create(b, loc, wide(b, loc, hi), i64Const(b, loc, 32)));
}

using Words = std::array<mlir::Value, 4>;

/// The 128-bit counter c plus n (an i64 >= 0), modulo 2^128.
Words addCounter(mlir::OpBuilder& b, mlir::Location loc, const Words& c, mlir::Value n) {
  mlir::Value lo = mlir::arith::AddIOp::create(b, loc, join(b, loc, c[0], c[1]), n);
  mlir::Value carry = mlir::arith::ExtUIOp::create(
      b, loc, b.getI64Type(), mlir::arith::CmpIOp::create(b, loc, CmpIPredicate::ult, lo, n));
  mlir::Value hi = mlir::arith::AddIOp::create(b, loc, join(b, loc, c[2], c[3]), carry);
  return {narrow(b, loc, lo), high(b, loc, lo), narrow(b, loc, hi), high(b, loc, hi)};
}

/// Philox4x32-10 of counter x with key (k0, k1), as Random123's philox4x32_R(10, ...).
Words philox(mlir::OpBuilder& b, mlir::Location loc, Words x, mlir::Value k0, mlir::Value k1) {
  auto mulhilo = [&](uint32_t m, mlir::Value v) {
    mlir::Value p = mlir::arith::MulIOp::create(b, loc, wide(b, loc, v), i64Const(b, loc, m));
    return std::pair{high(b, loc, p), narrow(b, loc, p)};
  };
  auto xori = [&](mlir::Value a, mlir::Value c) { return mlir::arith::XOrIOp::create(b, loc, a, c).getResult(); };
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      k0 = mlir::arith::AddIOp::create(b, loc, k0, i32Const(b, loc, kPhiloxW0));
      k1 = mlir::arith::AddIOp::create(b, loc, k1, i32Const(b, loc, kPhiloxW1));
    }
    auto [hi0, lo0] = mulhilo(kPhiloxM0, x[0]);
    auto [hi1, lo1] = mulhilo(kPhiloxM1, x[2]);
    x = {xori(xori(hi1, x[1]), k0), lo1, xori(xori(hi0, x[3]), k1), lo0};
  }
  return x;
}

/// Builds an element's value from its words (i32, in stream order).
using ElementFn = std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, const std::vector<mlir::Value>&)>;

struct Drawn {
  mlir::Value values;  // {count} of `type`
  mlir::Value state;   // {6}:u32, advanced
};

Drawn drawFlat(TraceContext& c, mlir::Location loc, mlir::Value state, int64_t count, int wordsPerElement, DType type,
               const ElementFn& element) {
  auto& b = c.builder();
  std::array<mlir::Value, 6> s;
  for (int k = 0; k < 6; ++k)
    s[k] = mlir::tensor::ExtractOp::create(b, loc, state, mlir::ValueRange{mlir::arith::ConstantIndexOp::create(b, loc, k)});
  const Words counter = {s[0], s[1], s[2], s[3]};
  const int64_t blocks = (count * wordsPerElement + 3) / 4;
  const Shape flat({count}, type);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{c.tensorType(flat)}, mlir::ValueRange{}, mlir::ValueRange{emptyLike(c, loc, flat)},
      llvm::ArrayRef<mlir::AffineMap>{b.getMultiDimIdentityMap(1)}, {mlir::utils::IteratorType::parallel},
      [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange) {
        mlir::Value e = mlir::arith::IndexCastOp::create(nb, l, nb.getI64Type(), mlir::linalg::IndexOp::create(nb, l, 0));
        mlir::Value pos = mlir::arith::MulIOp::create(nb, l, e, i64Const(nb, l, wordsPerElement));
        mlir::Value block = mlir::arith::ShRUIOp::create(nb, l, pos, i64Const(nb, l, 2));
        mlir::Value first = narrow(nb, l, mlir::arith::AndIOp::create(nb, l, pos, i64Const(nb, l, 3)));
        const Words out = philox(nb, l, addCounter(nb, l, counter, block), s[4], s[5]);
        std::vector<mlir::Value> words;
        for (int k = 0; k < wordsPerElement; ++k) {
          mlir::Value at = mlir::arith::AddIOp::create(nb, l, first, i32Const(nb, l, k));
          mlir::Value w = out[0];
          for (uint32_t j = 1; j < 4; ++j)
            w = mlir::arith::SelectOp::create(nb, l, mlir::arith::CmpIOp::create(nb, l, CmpIPredicate::eq, at, i32Const(nb, l, j)),
                                              out[j], w);
          words.push_back(w);
        }
        mlir::linalg::YieldOp::create(nb, l, mlir::ValueRange{element(nb, l, words)});
      });
  const Words next = addCounter(b, loc, counter, i64Const(b, loc, blocks));
  mlir::Value newState = mlir::tensor::FromElementsOp::create(
      b, loc, c.tensorType(Rng::stateShape()), mlir::ValueRange{next[0], next[1], next[2], next[3], s[4], s[5]});
  return {generic.getResult(0), newState};
}

/// The compute type of float draws: f64 for f64, else f32.
DType computeType(DType d) { return d == DType::f64 ? DType::f64 : DType::f32; }

/// u in [0, 1) on the grid of `bits` random bits (exact in the compute type).
mlir::Value unitFloat(mlir::OpBuilder& b, mlir::Location loc, const std::vector<mlir::Value>& words, size_t at, int bits,
                      mlir::Type ct) {
  mlir::Value k;
  if (bits > 32) {
    k = mlir::arith::ShRUIOp::create(b, loc, join(b, loc, words[at], words[at + 1]), i64Const(b, loc, 64 - bits));
  } else {
    k = mlir::arith::ShRUIOp::create(b, loc, words[at], i32Const(b, loc, 32 - bits));
  }
  mlir::Value f = mlir::arith::UIToFPOp::create(b, loc, ct, k);
  return mlir::arith::MulFOp::create(b, loc, f, floatConst(b, loc, ct, std::ldexp(1.0, -bits)));
}

mlir::Value convertScalar(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x, mlir::Type to) {
  if (x.getType() == to) return x;
  if (to.getIntOrFloatBitWidth() < x.getType().getIntOrFloatBitWidth()) return mlir::arith::TruncFOp::create(b, loc, to, x);
  return mlir::arith::ExtFOp::create(b, loc, to, x);
}

/// Random bits that fit the dtype: f32 24, f64 53, f16 11, bf16 8.
int mantissaBits(DType d) {
  switch (d) {
    case DType::f64: return 53;
    case DType::f16: return 11;
    case DType::bf16: return 8;
    default: return 24;
  }
}

const Rng& checked(const Rng& rng, const char* op) {
  if (rng.state.shape().dims() != Rng::stateShape().dims() || rng.state.dtype() != DType::u32)
    throw opError(op, "the generator's state must be " + Rng::stateShape().str() + ", got " + rng.state.shape().str());
  return rng;
}

void checkShape(const Shape& shape, bool wantFloat, const char* op) {
  const DType d = shape.dtype();
  if (wantFloat && !isFloat(d)) throw opError(op, "needs a float dtype, got " + shape.str());
  if (!wantFloat && (isFloat(d) || d == DType::bool_)) throw opError(op, "needs an integer dtype, got " + shape.str());
}

/// Runs a draw of `shape` and wraps the values (reshaped to `shape`, tags kept) and the new state.
RngDraw finishDraw(TraceContext& c, mlir::Location loc, const Drawn& d, const Shape& shape) {
  const Shape flat({shape.count()}, shape.dtype());
  Tensor values = c.wrap(reshapeValue(c, loc, d.values, flat, shape), shape);
  return RngDraw{Rng{c.wrap(d.state, Rng::stateShape())}, values};
}

/// Index (i32) of the largest x along `ax` (first on ties, NaN largest); with `payload` (same
/// dims, i32), that element of the payload instead. The axis is removed; `values`, when given,
/// receives the largest x. One reduction: see argmaxAlong.
mlir::Value argmaxOnce(TraceContext& c, mlir::Location loc, mlir::Value x, const Shape& s, int64_t ax, mlir::Value payload,
                       mlir::Value* values = nullptr) {
  auto& b = c.builder();
  std::vector<int64_t> dims;
  std::vector<mlir::AffineExpr> kept;
  std::vector<mlir::utils::IteratorType> iterators;
  for (int64_t i = 0; i < s.rank(); ++i) {
    iterators.push_back(i == ax ? mlir::utils::IteratorType::reduction : mlir::utils::IteratorType::parallel);
    if (i == ax) continue;
    dims.push_back(s.dim(i));
    kept.push_back(b.getAffineDimExpr(static_cast<unsigned>(i)));
  }
  const Shape reduced(dims, s.dtype());
  auto all = b.getMultiDimIdentityMap(static_cast<unsigned>(s.rank()));
  auto out = mlir::AffineMap::get(static_cast<unsigned>(s.rank()), 0, kept, b.getContext());
  std::vector<mlir::Value> inputs = {x};
  std::vector<mlir::AffineMap> maps = {all};
  if (payload) inputs.push_back(payload), maps.push_back(all);
  maps.push_back(out);
  maps.push_back(out);
  const double negInf = -std::numeric_limits<double>::infinity();
  mlir::Value inits[] = {filled(c, loc, reduced, negInf), filled(c, loc, reduced.withDtype(DType::i32), -1)};
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{c.tensorType(reduced), c.tensorType(reduced.withDtype(DType::i32))}, inputs, inits, maps,
      iterators, [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
        mlir::Value v = args[0];
        mlir::Value index = payload ? args[1]
                                    : mlir::arith::IndexCastOp::create(nb, l, nb.getI32Type(), mlir::linalg::IndexOp::create(nb, l, ax)).getResult();
        mlir::Value best = args[args.size() - 2], bestIndex = args[args.size() - 1];
        mlir::Value none = mlir::arith::CmpIOp::create(nb, l, CmpIPredicate::slt, bestIndex, i32Const(nb, l, 0));
        mlir::Value greater = mlir::arith::CmpFOp::create(nb, l, CmpFPredicate::OGT, v, best);
        mlir::Value nanOverNumber = mlir::arith::AndIOp::create(nb, l, mlir::arith::CmpFOp::create(nb, l, CmpFPredicate::UNO, v, v),
                                                                mlir::arith::CmpFOp::create(nb, l, CmpFPredicate::ORD, best, best));
        mlir::Value take = mlir::arith::OrIOp::create(nb, l, none, mlir::arith::OrIOp::create(nb, l, greater, nanOverNumber));
        mlir::linalg::YieldOp::create(nb, l, mlir::ValueRange{mlir::arith::SelectOp::create(nb, l, take, v, best),
                                                              mlir::arith::SelectOp::create(nb, l, take, index, bestIndex)});
      });
  if (values) *values = generic.getResult(0);
  return generic.getResult(1);
}

/// argmaxOnce's, in two steps where rows are long (x {rows, n}, ax 1, n > 2 kChunk): each row's
/// reduction is one sequential loop, and on a GPU one thread. The first step gives each chunk of
/// kChunk elements its own (rows x chunks loops), the second picks among the chunks' winners by
/// their values, carrying their indices (ties and NaN resolve as in one step: the first chunk
/// holds the first index, and -inf padding never beats a real element).
mlir::Value argmaxAlong(TraceContext& c, mlir::Location loc, mlir::Value x, const Shape& s, int64_t ax, mlir::Value payload,
                        Loc l) {
  constexpr int64_t kChunk = 256;
  if (s.rank() != 2 || ax != 1 || s.dim(1) <= 2 * kChunk) return argmaxOnce(c, loc, x, s, ax, payload);
  const int64_t rows = s.dim(0), n = s.dim(1), chunks = (n + kChunk - 1) / kChunk;
  const std::vector<std::pair<Axis, Padding>> tail = {{1, Padding{0, chunks * kChunk - n}}};
  const Tensor padded = c.wrap(x, s).pad(tail, -std::numeric_limits<double>::infinity(), l).reshape({rows, chunks, kChunk}, l);
  const Tensor index = (payload ? c.wrap(payload, Shape({rows, n}, DType::i32)).pad(tail, 0, l)
                                : Tensor::iota(Shape({rows, chunks * kChunk}, DType::i32), 1, l))
                           .reshape({rows, chunks, kChunk}, l);
  mlir::Value best;
  mlir::Value bestIndex = argmaxOnce(c, loc, c.value(padded, "argmax"), Shape({rows, chunks, kChunk}, s.dtype()), 2,
                                     c.value(index, "argmax"), &best);
  return argmaxAlong(c, loc, best, Shape({rows, chunks}, s.dtype()), 1, bestIndex, l);
}

Shape withoutAxis(const Shape& s, int64_t ax, DType dtype) {
  std::vector<int64_t> dims;
  std::vector<Tag> tags;
  for (int64_t i = 0; i < s.rank(); ++i)
    if (i != ax) dims.push_back(s.dim(i)), tags.push_back(s.tag(i));
  return Shape(dims, dtype).withTags(tags);
}

/// Nucleus mask over {rows, k} values sorted in descending order: keeps value j while the mass of
/// the tokens before it (probs) is below topP, so the kept set is the smallest reaching topP.
mlir::Value nucleusMask(TraceContext& c, mlir::Location loc, mlir::Value values, mlir::Value probs, int64_t rows, int64_t k,
                        DType ct, double topP) {
  auto& b = c.builder();
  mlir::Type t = c.elementType(ct);
  auto idx = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  mlir::Value c0 = idx(0), c1 = idx(1), p = floatConst(b, loc, t, topP);
  mlir::Value negInf = floatConst(b, loc, t, -std::numeric_limits<double>::infinity()), zero = floatConst(b, loc, t, 0);
  auto rowLoop = mlir::scf::ForOp::create(
      b, loc, c0, idx(rows), c1, mlir::ValueRange{emptyLike(c, loc, Shape({rows, k}, ct))},
      [&](mlir::OpBuilder& b, mlir::Location loc, mlir::Value r, mlir::ValueRange rowArgs) {
        auto colLoop = mlir::scf::ForOp::create(
            b, loc, c0, idx(k), c1, mlir::ValueRange{zero, rowArgs[0]},
            [&](mlir::OpBuilder& b, mlir::Location loc, mlir::Value j, mlir::ValueRange it) {
              mlir::Value v = mlir::tensor::ExtractOp::create(b, loc, values, mlir::ValueRange{r, j});
              mlir::Value q = mlir::tensor::ExtractOp::create(b, loc, probs, mlir::ValueRange{r, j});
              mlir::Value keep = mlir::arith::CmpFOp::create(b, loc, CmpFPredicate::OLT, it[0], p);
              mlir::Value masked = mlir::arith::SelectOp::create(b, loc, keep, v, negInf);
              mlir::Value out = mlir::tensor::InsertOp::create(b, loc, masked, it[1], mlir::ValueRange{r, j});
              mlir::scf::YieldOp::create(b, loc, mlir::ValueRange{mlir::arith::AddFOp::create(b, loc, it[0], q), out});
            });
        mlir::scf::YieldOp::create(b, loc, colLoop.getResult(1));
      });
  return rowLoop.getResult(0);
}

}  // namespace

Shape Rng::stateShape() { return Shape({6}, DType::u32); }

Rng Rng::init(const Platform& platform, uint64_t seed) {
  const std::vector<int64_t> words = {0, 0, 0, 0, static_cast<int64_t>(seed & 0xffffffffu), static_cast<int64_t>(seed >> 32)};
  return Rng{Tensor::fromValues(platform, stateShape(), words)};
}

Rng Rng::init(uint64_t seed, Loc l) {
  TraceContext& c = detail::currentTrace("Rng::init");
  auto loc = c.loc(l, "Rng::init");
  auto type = c.tensorType(stateShape());
  const int32_t lo = static_cast<int32_t>(seed & 0xffffffffu), hi = static_cast<int32_t>(seed >> 32);
  auto attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>{0, 0, 0, 0, lo, hi});
  return Rng{c.wrap(mlir::arith::ConstantOp::create(c.builder(), loc, type, attr), stateShape())};
}

RngDraw Rng::bitGenerator(const Shape& shape, Loc l) const {
  const char* op = "bitGenerator";
  TraceContext& c = detail::currentTrace(op);
  checkShape(shape, false, op);
  mlir::Value st = c.value(checked(*this, op).state, op);
  auto loc = c.loc(l, op);
  const bool is64 = sizeOf(shape.dtype()) == 8;
  mlir::Type t = c.elementType(shape.dtype());
  Drawn d = drawFlat(c, loc, st, shape.count(), is64 ? 2 : 1, shape.dtype(),
                     [&](mlir::OpBuilder& b, mlir::Location l, const std::vector<mlir::Value>& w) -> mlir::Value {
                       if (is64) return join(b, l, w[0], w[1]);
                       if (t == b.getI32Type()) return w[0];
                       return mlir::arith::TruncIOp::create(b, l, t, w[0]);
                     });
  return finishDraw(c, loc, d, shape);
}

RngDraw Rng::uniform(const Shape& shape, double lo, double hi, Loc l) const {
  const char* op = "uniform";
  TraceContext& c = detail::currentTrace(op);
  checkShape(shape, true, op);
  mlir::Value st = c.value(checked(*this, op).state, op);
  const DType d = shape.dtype(), ct = computeType(d);
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi))
    throw opError(op, "needs finite lo < hi, got [" + std::to_string(lo) + ", " + std::to_string(hi) + ") for " + shape.str());
  const double scale = hi - lo;
  if (!std::isfinite(scale) || (ct == DType::f32 && !std::isfinite(static_cast<float>(scale))))
    throw opError(op, "hi - lo overflows " + std::string(name(ct)) + " for " + shape.str());
  auto loc = c.loc(l, op);
  auto& b = c.builder();
  // The result is clamped to [lo rounded up, the largest value below hi] in the dtype, so that
  // rounding never yields hi.
  mlir::Type t = c.elementType(d), ctType = c.elementType(ct);
  const llvm::fltSemantics& sem = mlir::cast<mlir::FloatType>(t).getFloatSemantics();
  bool lost = false;
  llvm::APFloat loT(lo), hiT(hi);
  loT.convert(sem, llvm::APFloat::rmTowardPositive, &lost);
  hiT.convert(sem, llvm::APFloat::rmTowardNegative, &lost);
  if (!lost) hiT.next(/*nextDown=*/true);
  if (hiT.compare(loT) == llvm::APFloat::cmpLessThan)
    throw opError(op, "no " + std::string(name(d)) + " value in [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  mlir::Value loC = mlir::arith::ConstantOp::create(b, loc, b.getFloatAttr(t, loT));
  mlir::Value hiC = mlir::arith::ConstantOp::create(b, loc, b.getFloatAttr(t, hiT));
  const int bits = mantissaBits(d);
  Drawn drawn = drawFlat(c, loc, st, shape.count(), d == DType::f64 ? 2 : 1, d,
                         [&](mlir::OpBuilder& b, mlir::Location l, const std::vector<mlir::Value>& w) -> mlir::Value {
                           mlir::Value u = unitFloat(b, l, w, 0, bits, ctType);
                           mlir::Value y = mlir::arith::AddFOp::create(
                               b, l, floatConst(b, l, ctType, lo), mlir::arith::MulFOp::create(b, l, u, floatConst(b, l, ctType, scale)));
                           y = convertScalar(b, l, y, t);
                           y = mlir::arith::MinimumFOp::create(b, l, y, hiC);
                           return mlir::arith::MaximumFOp::create(b, l, y, loC);
                         });
  return finishDraw(c, loc, drawn, shape);
}

RngDraw Rng::normal(const Shape& shape, double mean, double stddev, Loc l) const {
  const char* op = "normal";
  TraceContext& c = detail::currentTrace(op);
  checkShape(shape, true, op);
  mlir::Value st = c.value(checked(*this, op).state, op);
  if (!(std::isfinite(mean) && std::isfinite(stddev) && stddev >= 0))
    throw opError(op, "needs a finite mean and stddev >= 0, got mean " + std::to_string(mean) + ", stddev " +
                          std::to_string(stddev) + " for " + shape.str());
  const DType d = shape.dtype(), ct = computeType(d);
  auto loc = c.loc(l, op);
  mlir::Type t = c.elementType(d), ctType = c.elementType(ct);
  const bool is64 = ct == DType::f64;
  const int bits = is64 ? 53 : 24;
  Drawn drawn = drawFlat(c, loc, st, shape.count(), is64 ? 4 : 2, d,
                         [&](mlir::OpBuilder& b, mlir::Location l, const std::vector<mlir::Value>& w) -> mlir::Value {
                           // Box-Muller: u1 in (0, 1] keeps the log finite.
                           mlir::Value one = floatConst(b, l, ctType, 1);
                           mlir::Value u1 = mlir::arith::SubFOp::create(b, l, one, unitFloat(b, l, w, 0, bits, ctType));
                           mlir::Value u2 = unitFloat(b, l, w, is64 ? 2 : 1, bits, ctType);
                           mlir::Value r = mlir::math::SqrtOp::create(
                               b, l, mlir::arith::MulFOp::create(b, l, floatConst(b, l, ctType, -2), mlir::math::LogOp::create(b, l, u1)));
                           mlir::Value angle = mlir::arith::MulFOp::create(b, l, u2, floatConst(b, l, ctType, 2 * std::numbers::pi));
                           mlir::Value z = mlir::arith::MulFOp::create(b, l, r, mlir::math::CosOp::create(b, l, angle));
                           mlir::Value y = mlir::arith::AddFOp::create(
                               b, l, floatConst(b, l, ctType, mean), mlir::arith::MulFOp::create(b, l, z, floatConst(b, l, ctType, stddev)));
                           return convertScalar(b, l, y, t);
                         });
  return finishDraw(c, loc, drawn, shape);
}

RngDraw Rng::gumbel(const Shape& shape, Loc l) const {
  const char* op = "gumbel";
  TraceContext& c = detail::currentTrace(op);
  checkShape(shape, true, op);
  mlir::Value st = c.value(checked(*this, op).state, op);
  const DType d = shape.dtype(), ct = computeType(d);
  auto loc = c.loc(l, op);
  mlir::Type t = c.elementType(d), ctType = c.elementType(ct);
  const bool is64 = ct == DType::f64;
  // u = (k + 1/2) 2^-bits with one bit fewer than the mantissa: exact, and strictly in (0, 1).
  const int bits = is64 ? 52 : 23;
  Drawn drawn = drawFlat(c, loc, st, shape.count(), is64 ? 2 : 1, d,
                         [&](mlir::OpBuilder& b, mlir::Location l, const std::vector<mlir::Value>& w) -> mlir::Value {
                           mlir::Value u = mlir::arith::AddFOp::create(b, l, unitFloat(b, l, w, 0, bits, ctType),
                                                                       floatConst(b, l, ctType, std::ldexp(1.0, -bits - 1)));
                           mlir::Value inner = mlir::arith::NegFOp::create(b, l, mlir::math::LogOp::create(b, l, u));
                           mlir::Value g = mlir::arith::NegFOp::create(b, l, mlir::math::LogOp::create(b, l, inner));
                           return convertScalar(b, l, g, t);
                         });
  return finishDraw(c, loc, drawn, shape);
}

RngDraw Rng::categorical(const Tensor& logits, Axis axis, Loc l) const {
  const char* op = "categorical";
  TraceContext& c = detail::currentTrace(op);
  const Shape& s = logits.shape();
  if (!isFloat(s.dtype())) throw opError(op, "needs float logits, got " + s.str());
  const int64_t ax = s.axis(axis, op);
  if (s.dim(ax) == 0) throw opError(op, "axis " + axis.str() + " of " + s.str() + " is empty: nothing to draw");
  auto loc = c.loc(l, op);
  const DType ct = computeType(s.dtype());
  const Shape cs = s.withDtype(ct);
  RngDraw noise = renamingErrors(op, [&] { return gumbel(cs, l); });
  mlir::Value x = convertValue(c, loc, c.value(logits, op), s.dtype(), ct, s);
  mlir::Value y = mlir::arith::AddFOp::create(c.builder(), loc, x, c.value(noise.values, op));
  const Shape out = withoutAxis(s, ax, DType::i32);
  return RngDraw{noise.rng, c.wrap(argmaxAlong(c, loc, y, cs, ax, nullptr, l), out)};
}

SampledTokens sampleTokens(const Tensor& logits, const SamplingOptions& o, const Rng& rng, Loc l) {
  const char* op = "sampleTokens";
  TraceContext& c = detail::currentTrace(op);
  const Shape& s = logits.shape();
  if (!isFloat(s.dtype()) || s.rank() == 0) throw opError(op, "needs float logits with a vocabulary axis, got " + s.str());
  if (!(o.temperature >= 0 && std::isfinite(o.temperature)))
    throw opError(op, "temperature must be finite and >= 0, got " + std::to_string(o.temperature));
  if (o.topK < 0) throw opError(op, "topK must be >= 0 (0 keeps all), got " + std::to_string(o.topK));
  if (!(o.topP > 0 && o.topP <= 1)) throw opError(op, "topP must be in (0, 1], got " + std::to_string(o.topP));
  checked(rng, op);
  const int64_t ax = s.hasTag("voc") >= 0 ? s.hasTag("voc") : s.rank() - 1;
  const int64_t voc = s.dim(ax);
  if (voc == 0) throw opError(op, "the vocabulary axis of " + s.str() + " is empty");
  auto loc = c.loc(l, op);
  auto& b = c.builder();
  // {rows, voc} in the compute type, the vocabulary last.
  const DType ct = computeType(s.dtype());
  mlir::Value x = convertValue(c, loc, c.value(logits, op), s.dtype(), ct, s);
  std::vector<int64_t> perm, movedDims;
  for (int64_t i = 0; i < s.rank(); ++i)
    if (i != ax) perm.push_back(i), movedDims.push_back(s.dim(i));
  perm.push_back(ax);
  movedDims.push_back(voc);
  const Shape moved(movedDims, ct);
  if (ax != s.rank() - 1) x = mlir::linalg::TransposeOp::create(b, loc, x, emptyLike(c, loc, moved), perm).getResult()[0];
  const int64_t rows = moved.count() / voc;
  const Shape flat({rows, voc}, ct);
  x = reshapeValue(c, loc, x, moved, flat);
  const Shape tokensShape = withoutAxis(s, ax, DType::i32);
  auto finish = [&](mlir::Value tokens, const Rng& next) {
    mlir::Value t = reshapeValue(c, loc, tokens, Shape({rows}, DType::i32), tokensShape);
    return SampledTokens{c.wrap(t, tokensShape), next};
  };
  if (o.temperature == 0) return finish(argmaxAlong(c, loc, x, flat, 1, nullptr, l), rng);

  return renamingErrors(op, [&] {
    Tensor scaled = c.wrap(x, flat).mulConstant(1 / o.temperature, l);
    const int64_t k = o.topK > 0 && o.topK < voc ? o.topK : voc;
    Tensor candidates = scaled;
    mlir::Value payload;
    if (k < voc || o.topP < 1) {
      TopK top = scaled.topK(k, 1, l);
      candidates = top.values;
      payload = c.value(top.indices, op);
    }
    if (o.topP < 1) {
      Tensor e = candidates.sub(candidates.max(1, l), l).exp(l);
      Tensor probs = e.div(e.sum(1, l), l);
      mlir::Value masked = nucleusMask(c, loc, c.value(candidates, op), c.value(probs, op), rows, k, ct, o.topP);
      candidates = c.wrap(masked, candidates.shape());
    }
    RngDraw noise = rng.gumbel(candidates.shape(), l);
    Tensor y = candidates.add(noise.values, l);
    return finish(argmaxAlong(c, loc, c.value(y, op), y.shape(), 1, payload, l), noise.rng);
  });
}

}  // namespace radix
