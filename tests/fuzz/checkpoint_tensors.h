#pragma once
// What the checkpoint fuzz targets (safetensors, GGUF) do with every tensor a parsed input lists.
#include <cstdint>

#include "radix/io.h"
#include "radix/platform.h"

namespace radix::fuzz {

/// Traps unless every tensor's bytes lie inside the input [data, data + size); reads their first
/// and last bytes, and loads the small ones (floats converted to f32): errors are fine, crashes
/// and sanitizer reports are findings.
inline void touchTensors(const radix::io::Checkpoint& ckpt, const uint8_t* data, size_t size) {
  static const radix::Platform cpu = radix::Platform::cpu();
  uint8_t sum = 0;
  for (const radix::io::TensorInfo& t : ckpt.tensors()) {
    auto bytes = ckpt.bytes(t.name);
    if (bytes.data() < data || bytes.data() + bytes.size() > data + size) __builtin_trap();  // outside the input
    if (!bytes.empty()) sum ^= bytes.front() ^ bytes.back();
    if (t.bytes <= 4096 && t.dtype) {
      try {
        radix::Tensor x = ckpt.load(cpu, t.name, radix::isFloat(*t.dtype) ? radix::DType::f32 : *t.dtype);
        (void)x.toBytes();
      } catch (const radix::Error&) {
      }
    }
  }
  (void)sum;
}

}  // namespace radix::fuzz
