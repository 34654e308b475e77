// dequantize: a quantized weight decoded in the graph, as one linalg.generic over {rows, cols}
// whose body reads the packed bytes (linalg.index + tensor.extract + arith). The op carries
// `radix.dequantize = "<type>"`; the compiler keeps it out of elementwise fusion and, where a
// contraction reads it, replaces both with a fused-decode kernel call
// (src/compiler/kernels/quant/lower_quant.cpp). Everywhere else it runs as written.
#include "radix/quant.h"

#include <string>

#include "compiler/kernels/quant/lower_quant.h"
#include "ops/common.h"

namespace radix {

using namespace ops;

namespace {

constexpr const char* kOp = "dequantize";

bool isGguf(QuantType t) { return ggmlTypeId(t) >= 0; }

// Builds the decode of element (r, c) inside the generic's body.
struct Decoder {
  mlir::OpBuilder& b;
  mlir::Location loc;
  mlir::Value data, r, c;

  mlir::Value idx(int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); }
  mlir::Value i32(int64_t v) { return mlir::arith::ConstantIntOp::create(b, loc, v, 32); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return mlir::arith::AddIOp::create(b, loc, x, y); }
  mlir::Value add(mlir::Value x, int64_t y) { return add(x, mlir::isa<mlir::IndexType>(x.getType()) ? idx(y) : i32(y)); }
  mlir::Value mul(mlir::Value x, int64_t y) {
    return mlir::arith::MulIOp::create(b, loc, x, mlir::isa<mlir::IndexType>(x.getType()) ? idx(y) : i32(y));
  }
  mlir::Value div(mlir::Value x, int64_t y) { return mlir::arith::DivUIOp::create(b, loc, x, idx(y)); }
  mlir::Value rem(mlir::Value x, int64_t y) { return mlir::arith::RemUIOp::create(b, loc, x, idx(y)); }
  mlir::Value band(mlir::Value x, int64_t y) { return mlir::arith::AndIOp::create(b, loc, x, i32(y)); }
  mlir::Value bor(mlir::Value x, mlir::Value y) { return mlir::arith::OrIOp::create(b, loc, x, y); }
  mlir::Value shr(mlir::Value x, mlir::Value y) { return mlir::arith::ShRUIOp::create(b, loc, x, y); }
  mlir::Value shr(mlir::Value x, int64_t y) { return shr(x, i32(y)); }
  mlir::Value shl(mlir::Value x, int64_t y) { return mlir::arith::ShLIOp::create(b, loc, x, i32(y)); }
  mlir::Value toI32(mlir::Value index) { return mlir::arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index); }
  mlir::Value below(mlir::Value index, int64_t v) {
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, index, idx(v));
  }
  mlir::Value select(mlir::Value cond, mlir::Value x, mlir::Value y) {
    return mlir::arith::SelectOp::create(b, loc, cond, x, y);
  }
  mlir::Value raw(mlir::Value offset) { return mlir::tensor::ExtractOp::create(b, loc, data, mlir::ValueRange{r, offset}); }
  // Byte at `offset` of row r, zero- or sign-extended to i32.
  mlir::Value u8(mlir::Value offset) { return mlir::arith::ExtUIOp::create(b, loc, b.getI32Type(), raw(offset)); }
  mlir::Value s8(mlir::Value offset) { return mlir::arith::ExtSIOp::create(b, loc, b.getI32Type(), raw(offset)); }
  // The block's f16 scale d, whose low byte is the op's input element (dLow).
  mlir::Value dLow;
  mlir::Value scaleD(mlir::Value base, int64_t at) {
    mlir::Value low = mlir::arith::ExtUIOp::create(b, loc, b.getI32Type(), dLow);
    return f16Bits(bor(low, shl(u8(add(base, at + 1)), 8)));
  }
  // Little-endian f16 at `offset`, as f32.
  mlir::Value f16(mlir::Value offset) { return f16Bits(bor(u8(offset), shl(u8(add(offset, 1)), 8))); }
  mlir::Value f16Bits(mlir::Value bits) {
    bits = mlir::arith::TruncIOp::create(b, loc, b.getI16Type(), bits);
    mlir::Value h = mlir::arith::BitcastOp::create(b, loc, b.getF16Type(), bits);
    return mlir::arith::ExtFOp::create(b, loc, b.getF32Type(), h);
  }
  mlir::Value sf(mlir::Value i) { return mlir::arith::SIToFPOp::create(b, loc, b.getF32Type(), i); }
  mlir::Value uf(mlir::Value i) { return mlir::arith::UIToFPOp::create(b, loc, b.getF32Type(), i); }
  mlir::Value fmul(mlir::Value x, mlir::Value y) { return mlir::arith::MulFOp::create(b, loc, x, y); }
  mlir::Value fadd(mlir::Value x, mlir::Value y) { return mlir::arith::AddFOp::create(b, loc, x, y); }
  mlir::Value fsub(mlir::Value x, mlir::Value y) { return mlir::arith::SubFOp::create(b, loc, x, y); }

  // Element e of a 32-element block of 16 nibble bytes at `qs`: low nibbles first.
  mlir::Value nibble32(mlir::Value qs, mlir::Value e) {
    mlir::Value byte = u8(add(qs, rem(e, 16)));
    return select(below(e, 16), band(byte, 15), shr(byte, 4));
  }
  // High bit e (0..31) of the 4 bytes at `qh`.
  mlir::Value bit32(mlir::Value qh, mlir::Value e) {
    mlir::Value byte = u8(add(qh, div(e, 8)));
    return band(shr(byte, toI32(rem(e, 8))), 1);
  }
  // The K-quants' 6-bit scale and min of sub-block `sub` (0..7) from the 12 bytes at `sc`.
  std::pair<mlir::Value, mlir::Value> scaleMin(mlir::Value sc, mlir::Value sub) {
    mlir::Value low = below(sub, 4);
    mlir::Value a = u8(add(sc, sub));                      // scales[sub]
    mlir::Value bb = u8(add(sc, add(sub, 4)));             // scales[sub + 4]
    mlir::Value back = select(low, sub, add(sub, -4));     // sub - 4 (in range when sub >= 4)
    mlir::Value cc = u8(add(sc, back));                    // scales[sub - 4]
    mlir::Value scale = select(low, band(a, 63), bor(band(bb, 15), shl(shr(cc, 6), 4)));
    mlir::Value min = select(low, band(bb, 63), bor(shr(bb, 4), shl(shr(a, 6), 4)));
    return {uf(scale), uf(min)};
  }

  // One element of a GGUF block: `e` its index in the block, `base` the block's first byte.
  mlir::Value gguf(QuantType t, mlir::Value base, mlir::Value e) {
    switch (t) {
      case QuantType::q8_0: return fmul(sf(s8(add(base, add(e, 2)))), scaleD(base, 0));
      case QuantType::q4_0: return fmul(sf(add(nibble32(add(base, 2), e), -8)), scaleD(base, 0));
      case QuantType::q4_1: return fadd(fmul(uf(nibble32(add(base, 4), e)), scaleD(base, 0)), f16(add(base, 2)));
      case QuantType::q5_0: {
        mlir::Value q = bor(nibble32(add(base, 6), e), shl(bit32(add(base, 2), e), 4));
        return fmul(sf(add(q, -16)), scaleD(base, 0));
      }
      case QuantType::q5_1: {
        mlir::Value q = bor(nibble32(add(base, 8), e), shl(bit32(add(base, 4), e), 4));
        return fadd(fmul(uf(q), scaleD(base, 0)), f16(add(base, 2)));
      }
      case QuantType::q4_k:
      case QuantType::q5_k: {
        // 4 groups of 64: sub-blocks 2g (low nibbles of 32 bytes) and 2g+1 (high nibbles).
        mlir::Value g = div(e, 64), l = rem(e, 64), l32 = rem(e, 32);
        mlir::Value hi = div(l, 32);
        mlir::Value sub = add(mul(g, 2), hi);
        const int64_t qsAt = t == QuantType::q4_k ? 16 : 48;
        mlir::Value byte = u8(add(base, add(add(mul(g, 32), l32), qsAt)));
        mlir::Value q = select(below(l, 32), band(byte, 15), shr(byte, 4));
        if (t == QuantType::q5_k) {
          mlir::Value hbit = band(shr(u8(add(base, add(l32, 16))), toI32(sub)), 1);
          q = add(q, shl(hbit, 4));
        }
        auto [scale, min] = scaleMin(add(base, 4), sub);
        mlir::Value d1 = fmul(scaleD(base, 0), scale), m1 = fmul(f16(add(base, 2)), min);
        return fsub(fmul(d1, uf(q)), m1);
      }
      case QuantType::q6_k: {
        // Two halves of 128; quarter t of a half: low/high nibbles of ql[l], ql[l + 32].
        mlir::Value h = div(e, 128), rr = rem(e, 128);
        mlir::Value quarter = div(rr, 32), l = rem(rr, 32);
        mlir::Value odd = rem(quarter, 2);
        mlir::Value qlByte = u8(add(base, add(add(mul(h, 64), l), mul(odd, 32))));
        mlir::Value nib = select(below(quarter, 2), band(qlByte, 15), shr(qlByte, 4));
        mlir::Value qhByte = u8(add(base, add(add(mul(h, 32), l), 128)));
        mlir::Value hbits = band(shr(qhByte, toI32(mul(quarter, 2))), 3);
        mlir::Value q = add(bor(nib, shl(hbits, 4)), -32);
        mlir::Value sc = s8(add(base, add(add(add(mul(h, 8), div(l, 16)), mul(quarter, 2)), 192)));
        return fmul(fmul(scaleD(base, 208), sf(sc)), sf(q));
      }
      default: break;
    }
    assert(false && "not a GGUF block type");
    return {};
  }
};

mlir::Value toF32(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v) {
  if (v.getType().isF32()) return v;
  return mlir::arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

mlir::Value fromF32(mlir::OpBuilder& b, mlir::Location loc, mlir::Value v, mlir::Type to) {
  if (to.isF32()) return v;
  if (to.getIntOrFloatBitWidth() > 32) return mlir::arith::ExtFOp::create(b, loc, to, v);
  return mlir::arith::TruncFOp::create(b, loc, to, v);
}

std::string typeText(QuantType t) { return std::string(quantName(t)); }

void checkScales(const char* what, const Tensor& s, const std::vector<int64_t>& dims, QuantType t) {
  const DType d = s.dtype();
  if (d != DType::f32 && d != DType::f16 && d != DType::bf16)
    throw opError(kOp, typeText(t) + " " + what + " must be f32, f16 or bf16, got " + s.shape().str());
  if (s.shape().dims() != dims) {
    std::string want = "{";
    for (size_t i = 0; i < dims.size(); ++i) want += (i ? "," : "") + std::to_string(dims[i]);
    throw opError(kOp, typeText(t) + " " + what + " " + s.shape().str() + " must be " + want + "}");
  }
}

}  // namespace

Tensor QuantizedTensor::dequantize(DType dtype, Loc l) const {
  TraceContext& c = detail::currentTrace(kOp);
  const QuantType t = type;
  if (t == QuantType::none) throw opError(kOp, "type is none: data " + data.shape().str() + " is not quantized");
  if (!isFloat(dtype)) throw opError(kOp, "result dtype must be a float type, got " + std::string(name(dtype)));
  const Shape& ds = data.shape();
  if (ds.rank() != 2) throw opError(kOp, typeText(t) + " data must be 2-D {rows, bytes}, got " + ds.str());
  const DType want = t == QuantType::i8_channel ? DType::i8 : DType::u8;
  if (ds.dtype() != want)
    throw opError(kOp, typeText(t) + " data must be " + std::string(name(want)) + ", got " + ds.str());
  const int64_t rows = ds.dim(0);
  const int64_t n = cols > 0 ? cols : t == QuantType::i8_channel ? ds.dim(1) : 0;
  if (n <= 0) throw opError(kOp, typeText(t) + " needs cols > 0 (the logical row length), got " + std::to_string(cols));
  if (n % blockElems(t) != 0)
    throw opError(kOp, typeText(t) + " cols " + std::to_string(n) + " is not a multiple of its block of " +
                           std::to_string(blockElems(t)));
  const int64_t bytes = rowBytes(t, n);
  if (ds.dim(1) != bytes)
    throw opError(kOp, typeText(t) + " data " + ds.str() + " has " + std::to_string(ds.dim(1)) + " bytes per row; " +
                           std::to_string(n) + " columns need " + std::to_string(bytes));
  const bool gguf = isGguf(t);
  if (gguf && (scales || zeros))
    throw opError(kOp, typeText(t) + " keeps its scales inside the blocks: scales/zeros must be empty");
  int64_t groups = 0;
  if (t == QuantType::i8_channel) {
    if (!scales) throw opError(kOp, "i8_channel needs scales {" + std::to_string(rows) + "}");
    if (zeros) throw opError(kOp, "i8_channel has no zeros");
    checkScales("scales", *scales, {rows}, t);
  } else if (t == QuantType::i4_group) {
    if (group != 32 && group != 64 && group != 128)
      throw opError(kOp, "i4_group group " + std::to_string(group) + " is not 32, 64 or 128");
    if (n % group != 0)
      throw opError(kOp, "i4_group cols " + std::to_string(n) + " is not a whole number of groups of " +
                             std::to_string(group));
    groups = n / group;
    if (!scales) throw opError(kOp, "i4_group needs scales {" + std::to_string(rows) + "," + std::to_string(groups) + "}");
    checkScales("scales", *scales, {rows, groups}, t);
    if (zeros) {
      checkScales("zeros", *zeros, {rows, groups}, t);
      if (zeros->dtype() != scales->dtype())
        throw opError(kOp, "i4_group zeros " + zeros->shape().str() + " must have the scales' dtype " +
                               std::string(name(scales->dtype())));
    }
  }

  auto loc = c.loc(l, kOp);
  Shape outShape = Shape({rows, n}, dtype);
  std::vector<Tag> tags = {ds.tag(0), ds.tag(1)};
  outShape = outShape.withTags(tags);
  mlir::OpBuilder& b = c.builder();
  mlir::Value init = emptyLike(c, loc, outShape);
  if (rows == 0) return c.wrap(init, outShape);

  mlir::MLIRContext* m = &c.mlir();
  const mlir::AffineExpr r = mlir::getAffineDimExpr(0, m), col = mlir::getAffineDimExpr(1, m);
  auto map = [&](std::vector<mlir::AffineExpr> e) { return mlir::AffineMap::get(2, 0, e, m); };
  std::vector<mlir::Value> inputs = {c.value(data, kOp)};
  // Each input's map names the byte/scale element (r, c) reads first: the compiler finds the
  // operands there, and the maps keep the op honest for any pass that reads them.
  std::vector<mlir::AffineMap> maps;
  if (gguf)  // the low byte of the block's scale d
    maps.push_back(map({r, col.floorDiv(blockElems(t)) * blockBytes(t) + (t == QuantType::q6_k ? 208 : 0)}));
  else if (t == QuantType::i8_channel)
    maps.push_back(map({r, col}));
  else
    maps.push_back(map({r, col.floorDiv(2)}));
  if (scales) {
    inputs.push_back(c.value(*scales, kOp));
    maps.push_back(t == QuantType::i8_channel ? map({r}) : map({r, col.floorDiv(group)}));
  }
  if (zeros) {
    inputs.push_back(c.value(*zeros, kOp));
    maps.push_back(map({r, col.floorDiv(group)}));
  }
  maps.push_back(map({r, col}));
  const mlir::Type outType = c.elementType(dtype);
  const mlir::Value dataValue = inputs[0];
  const bool hasZeros = zeros.has_value();
  std::vector<mlir::utils::IteratorType> iterators(2, mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{init.getType()}, inputs, mlir::ValueRange{init}, maps, iterators,
      [&](mlir::OpBuilder& nb, mlir::Location nl, mlir::ValueRange args) {
        Decoder d{nb, nl, dataValue, mlir::linalg::IndexOp::create(nb, nl, 0), mlir::linalg::IndexOp::create(nb, nl, 1),
                  args[0]};
        mlir::Value x;
        if (gguf) {
          mlir::Value base = d.mul(d.div(d.c, blockElems(t)), blockBytes(t));
          x = d.gguf(t, base, d.rem(d.c, blockElems(t)));
        } else if (t == QuantType::i8_channel) {
          mlir::Value q = mlir::arith::ExtSIOp::create(nb, nl, nb.getI32Type(), args[0]);
          x = d.fmul(toF32(nb, nl, args[1]), d.sf(q));
        } else {
          mlir::Value byte = mlir::arith::ExtUIOp::create(nb, nl, nb.getI32Type(), args[0]);
          mlir::Value q = d.select(d.below(d.rem(d.c, 2), 1), d.band(byte, 15), d.shr(byte, 4));
          mlir::Value centered = hasZeros ? d.fsub(d.uf(q), toF32(nb, nl, args[2])) : d.sf(d.add(q, -8));
          x = d.fmul(toF32(nb, nl, args[1]), centered);
        }
        mlir::linalg::YieldOp::create(nb, nl, fromF32(nb, nl, x, outType));
      });
  generic->setAttr(kernels::kDequantizeAttr, b.getStringAttr(quantName(t)));
  return c.wrap(generic.getResult(0), outShape);
}

}  // namespace radix
