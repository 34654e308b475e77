// libFuzzer target for the safetensors reader: the input is a whole .safetensors file (and, the
// same bytes, a config.json). Every input must give a Checkpoint whose tensors all lie inside the
// input, or a radix::Error; never a crash, a hang, an unbounded allocation or a sanitizer report.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "io/io.h"
#include "radix/io.h"
#include "radix/platform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const radix::Platform cpu = radix::Platform::cpu();
  try {
    radix::io::Checkpoint ckpt = radix::io::Checkpoint::fromSafetensorsBytes({data, size}, "fuzz.safetensors");
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
    for (const auto& [key, value] : ckpt.metadata()) (void)value.str();
    (void)sum;
  } catch (const radix::Error&) {
  }
  try {
    auto meta = radix::io::jsonMetadata({reinterpret_cast<const char*>(data), size}, "config.json", "config");
    for (const auto& [key, value] : meta) (void)value.str();
  } catch (const radix::Error&) {
  }
  return 0;
}
