#include "runtime/elf.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

extern "C" void __register_frame(void*);    // libgcc's unwinder: exceptions may cross compiled code
extern "C" void __deregister_frame(void*);

namespace radix::detail {
namespace {

constexpr size_t kStubBytes = 16;  // jmp *0(%rip); .quad target
constexpr uint64_t kMaxAlign = 4096;
enum Region { kCode, kConst, kData, kRegions };

void* lookupInProcess(const std::string& name) {
  if (void* p = dlsym(RTLD_DEFAULT, name.c_str())) return p;
  // When this library was loaded with RTLD_LOCAL, its own dependencies (libomp, libm) are not
  // in the global scope: search from this library's handle too.
  static void* self = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&lookupInProcess), &info) == 0 || !info.dli_fname) return static_cast<void*>(nullptr);
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }();
  return self ? dlsym(self, name.c_str()) : nullptr;
}

struct Section {
  Elf64_Shdr header{};
  Region region = kCode;
  bool loaded = false;
  size_t offset = 0;  // in the mapping
};

// Relocations that need a GOT entry for their symbol (small code model: GOTPCREL*; large: GOT64).
bool usesGotSlot(uint32_t type) {
  return type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX || type == R_X86_64_REX_GOTPCRELX ||
         type == R_X86_64_GOT64 || type == R_X86_64_GOTPCREL64 || type == R_X86_64_GOTPLT64;
}

bool fitsSigned32(int64_t v) { return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(); }

}  // namespace

std::unique_ptr<LinkedObject> LinkedObject::link(std::string_view bytes, std::string& why, bool runConstructors) {
  auto fail = [&](std::string reason) -> std::unique_ptr<LinkedObject> {
    why = std::move(reason);
    return nullptr;
  };
  auto within = [&](uint64_t offset, uint64_t size) { return offset <= bytes.size() && size <= bytes.size() - offset; };
  if (bytes.size() < sizeof(Elf64_Ehdr)) return fail("corrupt (entry.o is shorter than an ELF header)");
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return fail("corrupt (entry.o is no object file)");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
    return fail("foreign (entry.o is not a 64-bit little-endian x86-64 object)");
  if (eh.e_type != ET_REL) return fail("foreign (entry.o is not a relocatable object)");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || !within(eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)) ||
      eh.e_shstrndx >= eh.e_shnum)
    return fail("corrupt (entry.o's section table is out of bounds)");

  std::vector<Section> sections(eh.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i)
    std::memcpy(&sections[i].header, bytes.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(Elf64_Shdr));
  for (const Section& s : sections)
    if (s.header.sh_type != SHT_NOBITS && !within(s.header.sh_offset, s.header.sh_size))
      return fail("corrupt (a section of entry.o lies outside the file)");

  const Elf64_Shdr& names = sections[eh.e_shstrndx].header;
  const std::string_view shstrtab = names.sh_type == SHT_STRTAB ? bytes.substr(names.sh_offset, names.sh_size) : std::string_view();
  auto isEhFrame = [&](const Section& s) {
    if (s.header.sh_type == SHT_X86_64_UNWIND) return true;
    const char kName[] = ".eh_frame";
    return s.header.sh_name < shstrtab.size() && shstrtab.substr(s.header.sh_name).substr(0, sizeof kName) ==
                                                     std::string_view(kName, sizeof kName);
  };

  // The symbol table (one, with its string table).
  const char* symtab = nullptr;  // unaligned in a mutated file: only copied, never dereferenced
  size_t numSymbols = 0;
  std::string_view strtab;
  for (const Section& s : sections) {
    if (s.header.sh_type != SHT_SYMTAB) continue;
    if (symtab) return fail("corrupt (entry.o has two symbol tables)");
    if (s.header.sh_entsize != sizeof(Elf64_Sym) || s.header.sh_link >= sections.size() ||
        sections[s.header.sh_link].header.sh_type != SHT_STRTAB)
      return fail("corrupt (entry.o's symbol table)");
    const Elf64_Shdr& str = sections[s.header.sh_link].header;
    strtab = bytes.substr(str.sh_offset, str.sh_size);
    if (strtab.empty() || strtab.back() != '\0') return fail("corrupt (entry.o's string table is not terminated)");
    numSymbols = s.header.sh_size / sizeof(Elf64_Sym);
    symtab = bytes.data() + s.header.sh_offset;
  }
  if (!symtab) return fail("corrupt (entry.o has no symbol table)");
  std::vector<Elf64_Sym> symbols(numSymbols);
  if (numSymbols) std::memcpy(symbols.data(), symtab, numSymbols * sizeof(Elf64_Sym));
  auto symbolName = [&](const Elf64_Sym& sym) -> std::string {
    if (sym.st_name >= strtab.size()) return {};
    return std::string(strtab.data() + sym.st_name);
  };

  // Sections to map, by region.
  for (Section& s : sections) {
    const Elf64_Shdr& h = s.header;
    if (!(h.sh_flags & SHF_ALLOC) || h.sh_size == 0) continue;
    if (h.sh_flags & SHF_TLS) return fail("unsupported (entry.o has thread-local data)");
    // Constructors (a GPU object's: they register its cubins) run only when the caller vouches
    // for the bytes (a cache entry's hash matched); code that would run at load is refused otherwise.
    if (h.sh_type == SHT_PREINIT_ARRAY) return fail("unsupported (entry.o has a .preinit_array)");
    if ((h.sh_type == SHT_INIT_ARRAY || h.sh_type == SHT_FINI_ARRAY) && !runConstructors)
      return fail("unsupported (entry.o has static constructors or destructors)");
    const uint64_t align = std::max<uint64_t>(h.sh_addralign, 1);
    if ((align & (align - 1)) != 0 || align > kMaxAlign) return fail("corrupt (a section alignment of entry.o)");
    if (h.sh_size > bytes.size() + (uint64_t(1) << 32)) return fail("corrupt (a section of entry.o is too large)");
    s.region = (h.sh_flags & SHF_EXECINSTR) ? kCode : (h.sh_flags & SHF_WRITE) ? kData : kConst;
    s.loaded = true;
  }

  // Relocations: which symbols need a GOT slot, which external functions a stub.
  struct RelaSection {
    size_t target;
    std::vector<Elf64_Rela> entries;
  };
  std::vector<RelaSection> relas;
  std::vector<int32_t> gotSlot(numSymbols, -1), stubSlot(numSymbols, -1);
  int32_t numGot = 0, numStubs = 0;
  for (const Section& s : sections) {
    const Elf64_Shdr& h = s.header;
    if (h.sh_type == SHT_REL) return fail("unsupported (entry.o has REL relocations)");
    if (h.sh_type != SHT_RELA) continue;
    if (h.sh_info >= sections.size()) return fail("corrupt (a relocation section of entry.o)");
    if (!sections[h.sh_info].loaded) continue;  // debug info
    if (h.sh_entsize != sizeof(Elf64_Rela)) return fail("corrupt (a relocation section of entry.o)");
    RelaSection rela{h.sh_info, std::vector<Elf64_Rela>(h.sh_size / sizeof(Elf64_Rela))};
    if (!rela.entries.empty()) std::memcpy(rela.entries.data(), bytes.data() + h.sh_offset, rela.entries.size() * sizeof(Elf64_Rela));
    for (const Elf64_Rela& r : rela.entries) {
      const uint64_t sym = ELF64_R_SYM(r.r_info);
      const uint32_t type = ELF64_R_TYPE(r.r_info);
      if (sym >= numSymbols) return fail("corrupt (a relocation of entry.o names no symbol)");
      if (usesGotSlot(type) && gotSlot[sym] < 0) gotSlot[sym] = numGot++;
      if ((type == R_X86_64_PLT32 || type == R_X86_64_PC32) && symbols[sym].st_shndx == SHN_UNDEF && stubSlot[sym] < 0)
        stubSlot[sym] = numStubs++;
    }
    relas.push_back(std::move(rela));
  }

  // Layout: code (+ stubs), constants (+ GOT), data; each region starts on a page.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t offset = 0, regionStart[kRegions + 1] = {}, stubsAt = 0, gotAt = 0;
  for (int r = 0; r < kRegions; ++r) {
    regionStart[r] = offset;
    for (Section& s : sections) {
      if (!s.loaded || s.region != r) continue;
      const uint64_t align = std::max<uint64_t>(s.header.sh_addralign, 1);
      offset = (offset + align - 1) / align * align;
      s.offset = offset;
      offset += s.header.sh_size;
      // libgcc walks .eh_frame up to a zero terminator, which objects leave to the linker.
      if (isEhFrame(s)) offset += 8;
    }
    if (r == kCode) {
      offset = (offset + 15) / 16 * 16;
      stubsAt = offset;
      offset += size_t(numStubs) * kStubBytes;
    } else if (r == kConst) {
      offset = (offset + 7) / 8 * 8;
      gotAt = offset;
      offset += size_t(numGot) * 8;
    }
    offset = (offset + page - 1) / page * page;
  }
  regionStart[kRegions] = offset;
  if (offset == 0) return fail("corrupt (entry.o has no code)");
  void* mapped = mmap(nullptr, offset, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return fail("unloadable (no memory for " + std::to_string(offset) + " bytes of code and data)");
  std::unique_ptr<LinkedObject> out(new LinkedObject());
  out->base_ = static_cast<char*>(mapped);
  out->size_ = offset;
  char* base = out->base_;
  for (const Section& s : sections)
    if (s.loaded && s.header.sh_type != SHT_NOBITS) std::memcpy(base + s.offset, bytes.data() + s.header.sh_offset, s.header.sh_size);

  // Symbol addresses.
  std::vector<uint64_t> address(numSymbols, 0);
  for (size_t i = 1; i < numSymbols; ++i) {
    const Elf64_Sym& sym = symbols[i];
    const unsigned type = ELF64_ST_TYPE(sym.st_info), bind = ELF64_ST_BIND(sym.st_info);
    if (type == STT_GNU_IFUNC || type == STT_TLS) return fail("unsupported (entry.o has an indirect or thread-local symbol)");
    if (sym.st_shndx == SHN_UNDEF) {
      const std::string name = symbolName(sym);
      if (name.empty()) continue;
      if (name == "_GLOBAL_OFFSET_TABLE_") {  // the large code model addresses data from it
        address[i] = reinterpret_cast<uint64_t>(base + gotAt);
        continue;
      }
      void* p = lookupInProcess(name);
      if (!p && bind != STB_WEAK) return fail("unloadable (entry.o calls " + name + ", which this process does not define)");
      address[i] = reinterpret_cast<uint64_t>(p);
    } else if (sym.st_shndx == SHN_ABS) {
      address[i] = sym.st_value;
    } else if (sym.st_shndx >= SHN_LORESERVE) {
      return fail("unsupported (entry.o has a common or extended-index symbol)");
    } else if (sym.st_shndx < sections.size() && sections[sym.st_shndx].loaded) {
      const Section& s = sections[sym.st_shndx];
      if (sym.st_value > s.header.sh_size) return fail("corrupt (a symbol of entry.o lies outside its section)");
      address[i] = reinterpret_cast<uint64_t>(base + s.offset + sym.st_value);
      if ((bind == STB_GLOBAL || bind == STB_WEAK) && sym.st_name != 0) out->symbols_[symbolName(sym)] = reinterpret_cast<void*>(address[i]);
    } else if (sym.st_shndx >= sections.size()) {
      return fail("corrupt (a symbol of entry.o names no section)");
    }
  }
  for (size_t i = 0; i < numSymbols; ++i) {
    if (gotSlot[i] >= 0) std::memcpy(base + gotAt + size_t(gotSlot[i]) * 8, &address[i], 8);
    if (stubSlot[i] >= 0) {
      unsigned char* stub = reinterpret_cast<unsigned char*>(base + stubsAt + size_t(stubSlot[i]) * kStubBytes);
      const unsigned char jmp[6] = {0xff, 0x25, 0, 0, 0, 0};  // jmp *0(%rip)
      std::memcpy(stub, jmp, 6);
      std::memcpy(stub + 6, &address[i], 8);
    }
  }

  for (const RelaSection& rela : relas) {
    const Section& target = sections[rela.target];
    if (target.header.sh_type == SHT_NOBITS && !rela.entries.empty()) return fail("corrupt (relocations in a zero-filled section)");
    for (const Elf64_Rela& r : rela.entries) {
      const uint32_t type = ELF64_R_TYPE(r.r_info);
      const uint64_t sym = ELF64_R_SYM(r.r_info);
      const size_t width = (type == R_X86_64_64 || type == R_X86_64_PC64 || type == R_X86_64_GOTOFF64 ||
                            type == R_X86_64_GOTPC64 || type == R_X86_64_GOT64 || type == R_X86_64_GOTPCREL64 ||
                            type == R_X86_64_GOTPLT64 || type == R_X86_64_PLTOFF64)
                               ? 8
                               : 4;
      if (type == R_X86_64_NONE) continue;
      if (r.r_offset > target.header.sh_size || width > target.header.sh_size - r.r_offset)
        return fail("corrupt (a relocation of entry.o lies outside its section)");
      char* where = base + target.offset + r.r_offset;
      // Two's complement arithmetic, as linkers do: wild addends wrap instead of overflowing.
      const uint64_t P = reinterpret_cast<uint64_t>(where);
      const uint64_t S = address[sym], A = static_cast<uint64_t>(r.r_addend);
      const uint64_t GOT = reinterpret_cast<uint64_t>(base + gotAt);
      const uint64_t G = gotSlot[sym] >= 0 ? uint64_t(gotSlot[sym]) * 8 : 0;  // the entry's offset in the GOT
      uint64_t value = 0;
      switch (type) {
        case R_X86_64_64:
          value = S + A;
          break;
        case R_X86_64_PC64:
          value = S + A - P;
          break;
        case R_X86_64_PC32:
        case R_X86_64_PLT32:
          value = S + A - P;
          if (!fitsSigned32(static_cast<int64_t>(value)) && stubSlot[sym] >= 0)
            value = reinterpret_cast<uint64_t>(base + stubsAt + size_t(stubSlot[sym]) * kStubBytes) + A - P;
          if (!fitsSigned32(static_cast<int64_t>(value))) return fail("unsupported (a 32-bit PC-relative relocation of entry.o is out of range)");
          break;
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX:
          value = reinterpret_cast<uint64_t>(base + gotAt + size_t(gotSlot[sym]) * 8) + A - P;
          break;
        case R_X86_64_GOTPC32:
          value = GOT + A - P;
          if (!fitsSigned32(static_cast<int64_t>(value))) return fail("unsupported (a 32-bit GOT-relative relocation of entry.o is out of range)");
          break;
        case R_X86_64_GOTPC64:
          value = GOT + A - P;
          break;
        case R_X86_64_GOTOFF64:
        case R_X86_64_PLTOFF64:  // 64 bits reach the function itself: no PLT entry
          value = S + A - GOT;
          break;
        case R_X86_64_GOT64:
        case R_X86_64_GOTPLT64:
          value = G + A;
          break;
        case R_X86_64_GOTPCREL64:
          value = GOT + G + A - P;
          break;
        case R_X86_64_32:
          value = S + A;
          if (value > std::numeric_limits<uint32_t>::max())
            return fail("unsupported (an absolute 32-bit relocation of entry.o is out of range)");
          break;
        case R_X86_64_32S:
          value = S + A;
          if (!fitsSigned32(static_cast<int64_t>(value))) return fail("unsupported (an absolute 32-bit relocation of entry.o is out of range)");
          break;
        default:
          return fail("unsupported (entry.o has relocation type " + std::to_string(type) + ")");
      }
      if (width == 8) {
        std::memcpy(where, &value, 8);
      } else {
        const int32_t v32 = static_cast<int32_t>(value);
        std::memcpy(where, &v32, 4);
      }
    }
  }

  const int protections[kRegions] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
  for (int r = 0; r < kRegions; ++r) {
    const size_t n = regionStart[r + 1] - regionStart[r];
    if (n && mprotect(base + regionStart[r], n, protections[r]) != 0) return fail("unloadable (mprotect failed)");
  }
  for (const Section& s : sections) {
    if (!s.loaded) continue;
    if (isEhFrame(s) && !out->ehFrame_) {
      out->ehFrame_ = base + s.offset;
      __register_frame(out->ehFrame_);
    }
  }
  // Objects the compiler's JIT wrote carry their constructors (llvm.global_ctors) as ORC's
  // __orc_init_func.* / __orc_deinit_func.* functions rather than as .init_array entries.
  std::vector<void (*)()> orcInit;
  for (const auto& [name, address] : out->symbols_) {
    const bool init = name.rfind("__orc_init_func.", 0) == 0, deinit = name.rfind("__orc_deinit_func.", 0) == 0;
    if (!init && !deinit) continue;
    if (!runConstructors) return fail("unsupported (entry.o has static constructors or destructors)");
    void (*fn)() = nullptr;
    std::memcpy(&fn, &address, sizeof fn);
    (init ? orcInit : out->fini_).push_back(fn);
  }
  for (auto fn : orcInit) fn();
  for (const Section& s : sections) {
    if (!s.loaded || (s.header.sh_type != SHT_INIT_ARRAY && s.header.sh_type != SHT_FINI_ARRAY)) continue;
    for (size_t i = 0; i < s.header.sh_size / sizeof(void*); ++i) {
      void (*fn)() = nullptr;
      std::memcpy(&fn, base + s.offset + i * sizeof(void*), sizeof fn);
      if (!fn) continue;
      if (s.header.sh_type == SHT_INIT_ARRAY)
        fn();
      else
        out->fini_.push_back(fn);
    }
  }
  return out;
}

LinkedObject::~LinkedObject() {
  for (auto it = fini_.rbegin(); it != fini_.rend(); ++it) (*it)();
  if (ehFrame_) __deregister_frame(ehFrame_);
  if (base_) munmap(base_, size_);
}

void* LinkedObject::symbol(std::string_view name) const {
  auto it = symbols_.find(std::string(name));
  return it == symbols_.end() ? nullptr : it->second;
}

}  // namespace radix::detail
