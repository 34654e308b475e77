// The GGUF reader (v2 and v3).
#include "io/io.h"

namespace radix::io {

void parseGguf(Checkpoint::Impl& impl, size_t sourceIndex) {
  throw Error("[gguf] " + impl.sources[sourceIndex].label + ": GGUF is not supported yet");
}

}  // namespace radix::io
