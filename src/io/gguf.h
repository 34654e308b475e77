#pragma once
// ggml's tensor types as GGUF stores them: id, name, block layout (for the quantized compute of
// the next issue and for validating sizes now).
#include <cstdint>
#include <optional>
#include <string_view>

#include "radix/dtype.h"

namespace radix::io {

/// One ggml type: `block` elements are stored in `blockBytes` bytes (1 and the element size for
/// plain types). Q4_0: 32 elements in 18 bytes (an f16 scale and 16 bytes of nibbles).
struct GgmlType {
  uint32_t id;
  std::string_view name;
  uint64_t block;
  uint64_t blockBytes;
  std::optional<DType> dtype;  // plain types Radix computes in
};

/// ggml's GGML_MAX_DIMS.
constexpr uint32_t kMaxGgufDims = 4;

extern const GgmlType kGgmlTypes[32];
/// nullptr for unknown (or removed) type ids: ggmlType(8)->name -> "Q8_0"
const GgmlType* ggmlType(uint32_t id);
/// nullptr for unknown names: ggmlType("Q4_K")->blockBytes -> 144
const GgmlType* ggmlType(std::string_view name);

}  // namespace radix::io
