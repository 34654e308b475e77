// libFuzzer target for the GGUF reader: the input is a whole .gguf file. Every input must give a
// Checkpoint whose tensors all lie inside the input, or a radix::Error; never a crash, a hang, an
// allocation driven by an unchecked count, or a sanitizer report. Quantized tensors of the types
// Radix computes in are validated (checkBlocks) and, when small, decoded.
#include <cstdint>
#include <cstring>
#include <vector>

#include "checkpoint_tensors.h"
#include "radix/io.h"
#include "radix/platform.h"
#include "radix/quant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    radix::io::Checkpoint ckpt = radix::io::Checkpoint::fromGgufBytes({data, size}, "fuzz.gguf");
    radix::fuzz::touchTensors(ckpt, data, size);
    for (const radix::io::TensorInfo& t : ckpt.tensors()) {
      if (t.dtype) continue;
      try {
        const radix::QuantType q = radix::parseQuantType(t.type);
        const auto bytes = ckpt.bytes(t.name);
        radix::checkBlocks(q, bytes, t.name);
        const int64_t cols = t.dims.empty() ? 1 : t.dims.back();
        if (bytes.size() > 65536 || cols <= 0) continue;
        const int64_t rb = radix::rowBytes(q, cols);
        if (static_cast<uint64_t>(rb) > bytes.size()) continue;  // no whole row (an empty tensor)
        std::vector<float> row(static_cast<size_t>(cols));
        for (size_t at = 0; at + static_cast<size_t>(rb) <= bytes.size(); at += static_cast<size_t>(rb))
          radix::dequantizeRow(q, bytes.data() + at, cols, row.data());
      } catch (const radix::Error&) {
      }
    }
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
