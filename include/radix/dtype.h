#pragma once
/// Element types of Radix tensors.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace radix {

/// Element type. `bool_` is one byte per element on the host.
enum class DType : uint8_t { bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64 };

/// Bytes per element: sizeOf(DType::bf16) -> 2; throws radix::Error("[dtype] ...") for a value
/// outside the enum.
size_t sizeOf(DType dtype);
/// Throws radix::Error("[op] invalid DType 13 ...") unless dtype is one of the enum's values.
void checkDType(DType dtype, std::string_view op);
/// Lower-case name: name(DType::f16) -> "f16"; "invalid" for a value outside the enum.
std::string_view name(DType dtype);
/// True for f16, bf16, f32, f64.
bool isFloat(DType dtype);
/// True for i8..i64 (signed integers).
bool isSignedInt(DType dtype);
/// True for u8..u64 and bool_.
bool isUnsignedInt(DType dtype);
/// Parses a name: parseDType("bf16") -> DType::bf16; throws radix::Error on unknown names.
DType parseDType(std::string_view name);

}  // namespace radix
