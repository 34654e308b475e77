// libFuzzer target for the GGUF reader: the input is a whole .gguf file. Every input must give a
// Checkpoint whose tensors all lie inside the input, or a radix::Error; never a crash, a hang, an
// allocation driven by an unchecked count, or a sanitizer report.
#include <cstdint>
#include <cstring>

#include "checkpoint_tensors.h"
#include "radix/io.h"
#include "radix/platform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    radix::io::Checkpoint ckpt = radix::io::Checkpoint::fromGgufBytes({data, size}, "fuzz.gguf");
    radix::fuzz::touchTensors(ckpt, data, size);
    for (const auto& [key, value] : ckpt.metadata()) {
      (void)value.str();
      try {
        (void)value.asStrings();
      } catch (const radix::Error&) {
      }
    }
    try {
      (void)radix::io::readModelConfig(ckpt);
    } catch (const radix::Error&) {
    }
    try {
      (void)radix::io::vocabFromGguf(ckpt);
    } catch (const radix::Error&) {
    }
  } catch (const radix::Error&) {
  }
  return 0;
}
