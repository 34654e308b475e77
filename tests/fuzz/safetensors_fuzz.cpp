// libFuzzer target for the safetensors reader: the input is a whole .safetensors file (and, the
// same bytes, a config.json). Every input must give a Checkpoint whose tensors all lie inside the
// input, or a radix::Error; never a crash, a hang, an unbounded allocation or a sanitizer report.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "io/io.h"
#include "checkpoint_tensors.h"
#include "radix/io.h"
#include "radix/platform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    radix::io::Checkpoint ckpt = radix::io::Checkpoint::fromSafetensorsBytes({data, size}, "fuzz.safetensors");
    radix::fuzz::touchTensors(ckpt, data, size);
    for (const auto& [key, value] : ckpt.metadata()) (void)value.str();
  } catch (const radix::Error&) {
  }
  try {
    auto meta = radix::io::jsonMetadata({reinterpret_cast<const char*>(data), size}, "config.json", "config");
    for (const auto& [key, value] : meta) (void)value.str();
  } catch (const radix::Error&) {
  }
  return 0;
}
