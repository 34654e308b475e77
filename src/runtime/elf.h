#pragma once
// A loader for the relocatable x86-64 ELF objects that the compiler writes (cache entries'
// entry.o), without LLVM: the runtime library links objects into its own memory.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace radix::detail {

/// One object linked into this process: its allocated sections mapped (code read+execute,
/// constants read-only, data read+write), its RELA relocations applied, its undefined symbols
/// resolved in the process (dlsym), its .eh_frame registered with the unwinder. Unmapped when
/// destroyed.
class LinkedObject {
 public:
  /// Links `bytes`; nullptr with `why` set when they are not a well-formed relocatable x86-64
  /// object, use an unsupported relocation or section kind, or name a symbol the process lacks.
  /// With `runConstructors` (bytes the caller trusts), its .init_array runs once linked and its
  /// .fini_array when unlinked; without, an object that has them is refused.
  static std::unique_ptr<LinkedObject> link(std::string_view bytes, std::string& why, bool runConstructors = false);
  ~LinkedObject();
  LinkedObject(const LinkedObject&) = delete;
  LinkedObject& operator=(const LinkedObject&) = delete;

  /// The address of a global symbol the object defines, or nullptr.
  void* symbol(std::string_view name) const;
  /// Bytes of the object's mapping (code, constants, data and stubs).
  size_t mappedBytes() const { return size_; }

 private:
  LinkedObject() = default;
  char* base_ = nullptr;
  size_t size_ = 0;
  void* ehFrame_ = nullptr;
  std::unordered_map<std::string, void*> symbols_;
  std::vector<void (*)()> fini_;
};

}  // namespace radix::detail
