// radix::quantize / dequantizeHost: whole bound weights to and from QuantizedTensor on the host.
// GGUF formats go row by row through quantizeRow; the int formats are defined here:
//  - i8_channel: s = f16(amax / 127) per row, q = clamp(round(x / s), -127, 127), x = s*q;
//  - i4_group: per group, as q4_0: s = f16(max / -8) (max: the value of largest magnitude),
//    q = clamp(round(x / s) + 8, 0, 15), x = s*(q - z) with z = 8 (or the zeros tensor's value).
#include <cmath>
#include <string>
#include <vector>

#include "radix/error.h"
#include "radix/platform.h"
#include "radix/quant.h"
#include "runtime/runtime.h"

#pragma clang fp contract(off)

namespace radix {
namespace {

const Platform& hostPlatform() {
  static Platform cpu = Platform::cpu();
  return cpu;
}

std::string dims(const Tensor& t) {
  std::string s = "{";
  for (int64_t i = 0; i < t.rank(); ++i) s += (i ? "," : "") + std::to_string(t.shape().dim(i));
  return s + "}:" + std::string(name(t.dtype()));
}

float roundedHalf(float v) { return detail::halfToFloat(detail::floatToHalf(v)); }

Tensor halves(const std::vector<float>& values, int64_t rows, int64_t cols) {
  std::vector<uint16_t> h(values.size());
  for (size_t i = 0; i < values.size(); ++i) h[i] = detail::floatToHalf(values[i]);
  return Tensor::fromBytes(hostPlatform(), Shape({rows, cols}, DType::f16), h.data(), h.size() * 2);
}

void checkScale(float s, int64_t row, int64_t group) {
  if (!std::isfinite(s))
    throw Error("[quantize] row " + std::to_string(row) + (group >= 0 ? " group " + std::to_string(group) : "") +
                ": scale " + std::to_string(s) + " does not fit f16");
}

}  // namespace

QuantizedTensor quantize(const Tensor& weight, QuantType type, int64_t group) {
  if (!weight.isBound()) throw Error("[quantize] the weight must be bound (a host tensor), not traced");
  if (weight.rank() != 2) throw Error("[quantize] expects a {rows, cols} weight, got " + dims(weight));
  if (weight.dtype() != DType::f32 && weight.dtype() != DType::f16 && weight.dtype() != DType::bf16)
    throw Error("[quantize] expects an f32, f16 or bf16 weight, got " + dims(weight));
  if (type == QuantType::none) throw Error("[quantize] QuantType::none is not a quantized format");
  const int64_t rows = weight.shape().dim(0), cols = weight.shape().dim(1);
  const std::vector<float> x = weight.toVector<float>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]))
      throw Error("[quantize] element " + std::to_string(i) + " of " + dims(weight) + " is " + (std::isnan(x[i]) ? "nan" : "inf"));
  QuantizedTensor q;
  q.type = type;
  q.cols = cols;

  if (type == QuantType::i8_channel) {
    std::vector<int8_t> data(x.size());
    std::vector<float> scales(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data() + r * cols;
      float amax = 0;
      for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(xr[c]));
      const float s = roundedHalf(amax / 127);
      checkScale(s, r, -1);
      scales[static_cast<size_t>(r)] = s;
      for (int64_t c = 0; c < cols; ++c) {
        const float v = s != 0.f ? std::round(xr[c] / s) : 0.f;
        data[static_cast<size_t>(r * cols + c)] = static_cast<int8_t>(std::fmax(-127.f, std::fmin(127.f, v)));
      }
    }
    q.data = Tensor::fromBytes(hostPlatform(), Shape({rows, cols}, DType::i8), data.data(), data.size());
    std::vector<uint16_t> h(scales.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = detail::floatToHalf(scales[i]);
    q.scales = Tensor::fromBytes(hostPlatform(), Shape({rows}, DType::f16), h.data(), h.size() * 2);
    return q;
  }

  if (type == QuantType::i4_group) {
    if (group != 32 && group != 64 && group != 128)
      throw Error("[quantize] i4_group: group " + std::to_string(group) + " is not 32, 64 or 128");
    if (cols % group != 0)
      throw Error("[quantize] i4_group: " + std::to_string(cols) + " columns of " + dims(weight) +
                  " are not a whole number of groups of " + std::to_string(group));
    const int64_t groups = cols / group;
    std::vector<uint8_t> data(static_cast<size_t>(rows * cols / 2), 0);
    std::vector<float> scales(static_cast<size_t>(rows * groups));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t g = 0; g < groups; ++g) {
        const float* xg = x.data() + r * cols + g * group;
        float amax = 0, max = 0;
        for (int64_t c = 0; c < group; ++c)
          if (std::fabs(xg[c]) > amax) {
            amax = std::fabs(xg[c]);
            max = xg[c];
          }
        const float s = roundedHalf(max / -8);
        checkScale(s, r, g);
        scales[static_cast<size_t>(r * groups + g)] = s;
        for (int64_t c = 0; c < group; ++c) {
          const float v = s != 0.f ? std::round(xg[c] / s) + 8.f : 8.f;
          const auto level = static_cast<uint8_t>(std::fmax(0.f, std::fmin(15.f, v)));
          const int64_t e = r * cols + g * group + c;
          data[static_cast<size_t>(e / 2)] |= static_cast<uint8_t>(e % 2 ? level << 4 : level);
        }
      }
    }
    q.group = group;
    q.data = Tensor::fromBytes(hostPlatform(), Shape({rows, cols / 2}, DType::u8), data.data(), data.size());
    q.scales = halves(scales, rows, groups);
    return q;
  }

  if (cols % blockElems(type) != 0)
    throw Error("[quantize] " + std::string(quantName(type)) + ": rows of " + std::to_string(cols) + " in " + dims(weight) +
                " are not a whole number of " + std::to_string(blockElems(type)) + "-element blocks");
  const int64_t rb = rowBytes(type, cols);
  std::vector<uint8_t> data(static_cast<size_t>(rows * rb));
  for (int64_t r = 0; r < rows; ++r) {
    try {
      quantizeRow(type, x.data() + r * cols, cols, data.data() + r * rb);
    } catch (const Error& e) {
      throw Error("[quantize] row " + std::to_string(r) + " of " + dims(weight) + ": " + e.what());
    }
  }
  q.data = Tensor::fromBytes(hostPlatform(), Shape({rows, rb}, DType::u8), data.data(), data.size());
  return q;
}

Tensor dequantizeHost(const QuantizedTensor& q) {
  if (!q.data.isBound()) throw Error("[dequantizeHost] data must be bound (a host tensor), not traced");
  if (q.data.rank() != 2) throw Error("[dequantizeHost] data must be {rows, bytes}, got " + dims(q.data));
  const int64_t rows = q.data.shape().dim(0), cols = q.cols;
  const std::string what = "[dequantizeHost] " + std::string(quantName(q.type)) + " ";
  if (q.type == QuantType::none) throw Error("[dequantizeHost] QuantType::none is not a quantized format");
  if (cols < 0) throw Error(what + "cols " + std::to_string(cols) + " is negative");
  const int64_t rb = rowBytes(q.type, cols);
  const DType dataType = q.type == QuantType::i8_channel ? DType::i8 : DType::u8;
  if (q.data.dtype() != dataType || q.data.shape().dim(1) != rb)
    throw Error(what + "of " + std::to_string(cols) + " columns needs data {" + std::to_string(rows) + "," +
                std::to_string(rb) + "}:" + std::string(name(dataType)) + ", got " + dims(q.data));
  const std::vector<uint8_t> bytes = q.data.toBytes();
  std::vector<float> y(static_cast<size_t>(rows * cols));

  if (q.type == QuantType::i8_channel || q.type == QuantType::i4_group) {
    const bool i4 = q.type == QuantType::i4_group;
    if (i4 && (q.group != 32 && q.group != 64 && q.group != 128))
      throw Error(what + "group " + std::to_string(q.group) + " is not 32, 64 or 128");
    if (i4 && cols % q.group != 0)
      throw Error(what + std::to_string(cols) + " columns are not a whole number of groups of " + std::to_string(q.group));
    const int64_t groups = i4 ? cols / q.group : 1;
    const int64_t groupCols = i4 ? q.group : cols;
    auto checkSide = [&](const std::optional<Tensor>& t, const char* field) {
      if (!t) return;
      const bool ok = t->isBound() && (i4 ? t->rank() == 2 && t->shape().dim(0) == rows && t->shape().dim(1) == groups
                                          : t->rank() == 1 && t->shape().dim(0) == rows);
      if (!ok)
        throw Error(what + field + " must be bound " + (i4 ? "{" + std::to_string(rows) + "," + std::to_string(groups) + "}"
                                                           : "{" + std::to_string(rows) + "}") +
                    ", got " + dims(*t));
    };
    if (!q.scales) throw Error(what + "needs scales");
    checkSide(q.scales, "scales");
    if (!i4 && q.zeros) throw Error(what + "has no zeros");
    checkSide(q.zeros, "zeros");
    const std::vector<float> s = q.scales->toVector<float>();
    const std::vector<float> z = q.zeros ? q.zeros->toVector<float>() : std::vector<float>();
    for (size_t i = 0; i < s.size(); ++i)
      if (!std::isfinite(s[i])) throw Error(what + "scale " + std::to_string(i) + " is " + (std::isnan(s[i]) ? "nan" : "inf"));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t e = r * cols + c, g = r * groups + c / groupCols;
        float v;
        if (i4) {
          const int level = (bytes[static_cast<size_t>(e / 2)] >> (e % 2 ? 4 : 0)) & 0xF;
          v = s[static_cast<size_t>(g)] * (static_cast<float>(level) - (q.zeros ? z[static_cast<size_t>(g)] : 8.f));
        } else {
          v = s[static_cast<size_t>(r)] * static_cast<float>(static_cast<int8_t>(bytes[static_cast<size_t>(e)]));
        }
        y[static_cast<size_t>(e)] = v;
      }
    }
  } else {
    checkBlocks(q.type, bytes, "dequantizeHost");
    for (int64_t r = 0; r < rows; ++r) dequantizeRow(q.type, bytes.data() + r * rb, cols, y.data() + r * cols);
  }
  return Tensor::fromValues(hostPlatform(), Shape({rows, cols}, DType::f32), y);
}

}  // namespace radix
