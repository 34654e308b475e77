#pragma once
/// Quantized weights: llama.cpp's GGUF block formats (bit-exact with ggml-common.h) and the
/// group-wise int formats of AWQ/GPTQ/MLX checkpoints. A quantized weight is a plain struct of
/// Tensors (QuantizedTensor); `dequantize()` is a graph op whose decode the compiler fuses into
/// the contraction that consumes it, so the f32 weight is never materialized.
///
/// Layouts (one row = `cols` logical elements, a whole number of blocks):
///  - q8_0: 32 elems, 34 B  {f16 d; i8 qs[32]}                 x = d*q
///  - q4_0: 32 elems, 18 B  {f16 d; u8 qs[16]}                 x = d*(q-8), low nibbles first
///  - q4_1: 32 elems, 20 B  {f16 d, m; u8 qs[16]}              x = d*q + m
///  - q5_0: 32 elems, 22 B  {f16 d; u8 qh[4]; u8 qs[16]}       x = d*(q-16)
///  - q5_1: 32 elems, 24 B  {f16 d, m; u8 qh[4]; u8 qs[16]}    x = d*q + m
///  - q4_k: 256 elems, 144 B {f16 d, dmin; u8 scales[12]; u8 qs[128]}  6-bit sub-scales/mins
///  - q5_k: 256 elems, 176 B {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}
///  - q6_k: 256 elems, 210 B {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}
///  - i8_channel: i8 {rows, cols} data + scales {rows} (f16/bf16/f32)       x = s*q
///  - i4_group: u8 {rows, cols/2} data (low nibble first) + scales {rows, cols/group} and
///    optional zeros {rows, cols/group}: x = s*(q - z), z = 8 when absent; group 32/64/128.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "radix/loc.h"
#include "radix/tensor.h"

namespace radix {

/// The quantized formats Radix computes in. `none` means a plain float tensor.
enum class QuantType : uint8_t { none, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, i8_channel, i4_group };

/// Lower-case name: quantName(QuantType::q4_k) -> "q4_k"
std::string_view quantName(QuantType type);
/// GGUF's upper-case type name: ggufTypeName(QuantType::q4_k) -> "Q4_K"
std::string_view ggufTypeName(QuantType type);
/// Parses "q4_k", "Q4_K", "q8_0", ...: parseQuantType("Q6_K") -> QuantType::q6_k; [quant] error otherwise.
QuantType parseQuantType(std::string_view name);
/// GGML's type id (GGUF tensor info): ggmlTypeId(QuantType::q4_0) -> 2; -1 for non-GGUF formats.
int ggmlTypeId(QuantType type);
/// Logical elements per block: blockElems(QuantType::q4_k) -> 256 (1 for i8_channel; 2 in one
/// byte for i4_group).
int64_t blockElems(QuantType type);
/// Bytes per block: blockBytes(QuantType::q4_k) -> 144.
int64_t blockBytes(QuantType type);
/// Bytes of one packed row of `cols` elements: rowBytes(QuantType::q4_0, 64) -> 36; [quant]
/// error when cols is not a whole number of blocks.
int64_t rowBytes(QuantType type, int64_t cols);

/// Host codecs for the GGUF block formats (q8_0 .. q6_k), bit-exact with llama.cpp's reference
/// (quantize_row_*_ref / dequantize_row_*). `n` is a multiple of blockElems(type).
/// quantizeRow(QuantType::q4_0, x.data(), 64, out.data()) writes 36 bytes.
void quantizeRow(QuantType type, const float* x, int64_t n, uint8_t* out);
/// dequantizeRow(QuantType::q4_0, blocks, 64, y.data()) writes 64 floats.
void dequantizeRow(QuantType type, const uint8_t* blocks, int64_t n, float* y);
/// Validates packed blocks read from an untrusted file: a NaN/Inf scale or min throws
/// "[quant] NAME: block B: scale is nan". checkBlocks(QuantType::q8_0, bytes, "blk.0.attn_q.weight")
void checkBlocks(QuantType type, std::span<const uint8_t> bytes, std::string_view name);

/// A quantized 2-D weight {rows, cols}: for GGUF formats `data` is u8 {rows, rowBytes} with the
/// scales inside the blocks; for i8_channel/i4_group `scales` (and maybe `zeros`) are separate.
/// QuantizedTensor{data {768,432}:u8, .type = q4_0, .cols = 768}.dequantize() -> {768,768}:f32
struct QuantizedTensor {
  Tensor data;
  std::optional<Tensor> scales;
  std::optional<Tensor> zeros;
  QuantType type = QuantType::none;
  int64_t cols = 0;
  int64_t group = 0;  // i4_group only

  /// Rows (data's first dim).
  int64_t rows() const { return data.shape().dim(0); }
  /// In the graph: the dequantized {rows, cols} weight, tagged as `tags` (when given).
  /// Fused into a consuming dot/dotGeneral; materialized only when something else reads it.
  Tensor dequantize(DType dtype = DType::f32, Loc loc = Loc::current()) const;
};

/// Host: quantizes a bound f32/f16/bf16 {rows, cols} tensor.
/// quantize(w {768,768}:f32, QuantType::q4_k) -> data {768,432}:u8
QuantizedTensor quantize(const Tensor& weight, QuantType type, int64_t group = 32);
/// Host: decodes a bound QuantizedTensor to f32 {rows, cols}.
Tensor dequantizeHost(const QuantizedTensor& q);

}  // namespace radix
