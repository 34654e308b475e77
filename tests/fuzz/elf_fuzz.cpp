// libFuzzer target for the runtime's ELF linker (runtime/elf.h): every input is linked and
// unlinked, or refused with a reason; never a crash, a hang or a sanitizer report. The linked code
// is never run (the cache runs only objects whose bytes match meta.json's hash).
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/elf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string why;
  auto linked = radix::detail::LinkedObject::link(std::string_view(reinterpret_cast<const char*>(data), size), why);
  if (linked) (void)linked->symbol("_mlir_radix_entry");
  return 0;
}
