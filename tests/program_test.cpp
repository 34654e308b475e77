// radix::Program (the runtime's loader of cache entries, docs/aot.md) and the ELF linker under it
// (runtime/elf.h): entries written by radix::compile load and run without the compiler's JIT,
// give the same results, and every bad entry or object is a clear error, never a crash.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "io_testing.h"
#include "mlp/mlp.h"
#include "ops_testing.h"
#include "radix/runtime.h"
#include "runtime/cache.h"
#include "runtime/elf.h"

namespace {

namespace fs = std::filesystem;
using namespace radix;
using opstest::expectError;

Platform cachedIn(const fs::path& dir, CompileOptions options = {}) {
  options.cache = true;
  options.cacheDir = dir.string();
  return Platform::cpu().withOptions(options);
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

// The MLP compiled into `dir`'s cache; returns the entry folder.
std::string compileMlp(const Platform& p) {
  mlp::MLP model = mlp::example(p);
  Tensor x = mlp::input(p);
  Exe exe = compile(p, &mlp::MLP::forward, model, x);
  EXPECT_FALSE(exe.cacheEntry().empty());
  return exe.cacheEntry();
}

TEST(Program, LoadsAnEntryAndRunsItAsTheCompiledExe) {
  radix::iotest::TempDir dir("program");
  const Platform cpu = cachedIn(dir.path);
  mlp::MLP model = mlp::example(cpu);
  Tensor x = mlp::input(cpu);
  Exe exe = compile(cpu, &mlp::MLP::forward, model, x);
  const std::vector<float> want = exe(model, x).toVector<float>();
  Program p = Program::load(Platform::cpu(), exe.cacheEntry());
  EXPECT_EQ(p.name(), "MLP");
  ASSERT_EQ(p.argumentPaths().size(), 7u);
  EXPECT_EQ(p.argumentPaths().front(), "self.layers[0].w");
  EXPECT_EQ(p.argumentPaths().back(), "arg0");
  EXPECT_EQ(p.argumentShapes().back(), Shape({2}, DType::f32));
  ASSERT_EQ(p.resultShapes().size(), 1u);
  EXPECT_EQ(p.resultShapes()[0], Shape({3}, DType::f32));

  // By structure (as at compile time), by leaves, by paths.
  EXPECT_EQ(p(model, x).at(0).toVector<float>(), want);
  std::vector<Tensor> leaves;
  std::map<std::string, Tensor> named;
  for (const mlp::Layer& l : model.layers) leaves.push_back(l.w), leaves.push_back(l.b);
  leaves.push_back(x);
  for (size_t i = 0; i < leaves.size(); ++i) named[p.argumentPaths()[i]] = leaves[i];
  EXPECT_EQ(p.run(leaves).at(0).toVector<float>(), want);
  EXPECT_EQ(p.run(named).at(0).toVector<float>(), want);
  EXPECT_EQ(want, (std::vector<float>{20, 0, 0}));

  // New inputs: the program is general, not a replay.
  Tensor x2 = Tensor::fromValues(cpu, Shape({2}, DType::f32), {2, 1});
  EXPECT_EQ(p(model, x2).at(0).toVector<float>(), exe(model, x2).toVector<float>());
}

TEST(Program, FindsTheNewestEntryByNameAndShapes) {
  radix::iotest::TempDir dir("program-find");
  const Platform cpu = cachedIn(dir.path);
  const std::string f32Entry = compileMlp(cpu);
  mlp::MLP model16 = mlp::example(cpu, DType::f16);
  Tensor x16 = mlp::input(cpu, DType::f16);
  Exe exe16 = compile(cpu, &mlp::MLP::forward, model16, x16);
  std::vector<Shape> f32Shapes;
  for (const mlp::Layer& l : mlp::example(cpu).layers) f32Shapes.push_back(l.w.shape()), f32Shapes.push_back(l.b.shape());
  f32Shapes.push_back(Shape({2}, DType::f32));
  EXPECT_EQ(Program::find(Platform::cpu(), "MLP", f32Shapes, dir.path.string()).path(), f32Entry);
  Program p16 = Program::find(Platform::cpu(), "MLP", {}, dir.path.string());  // the newest
  EXPECT_EQ(p16.path(), exe16.cacheEntry());
  EXPECT_EQ(p16(model16, x16).at(0).toVector<float>(), (std::vector<float>{20, 0, 0}));
  expectError([&] { Program::find(Platform::cpu(), "Nope", {}, dir.path.string()); }, "[runtime] no loadable entry named \"Nope\"",
              (dir.path / "cpu").string());
  expectError([&] { Program::find(Platform::cpu(), "MLP", {Shape({9}, DType::f32)}, dir.path.string()); },
              "[runtime] no loadable entry named \"MLP\" taking ({9}:f32)", "radix compile");
}

TEST(Program, CallErrorsNameTheArgument) {
  radix::iotest::TempDir dir("program-call");
  const Platform cpu = cachedIn(dir.path);
  Program p = Program::load(cpu, compileMlp(cpu));
  mlp::MLP model = mlp::example(cpu);
  expectError([&] { p(model, Tensor::fromValues(cpu, Shape({3}, DType::f32), {1, 2, 3})); }, "[exe] arg0 is {3}:f32",
              "compiled for {2}:f32");
  expectError([&] { p(model); }, "[runtime] MLP takes 7 tensors", "got 6");
  expectError([&] { p.run(std::map<std::string, Tensor>{{"arg0", mlp::input(cpu)}}); }, "[runtime] MLP takes self.layers[0].w",
              "does not give");
  std::map<std::string, Tensor> extra;
  for (size_t i = 0; i < 3; ++i) {
    extra["self.layers[" + std::to_string(i) + "].w"] = model.layers[i].w;
    extra["self.layers[" + std::to_string(i) + "].b"] = model.layers[i].b;
  }
  extra["arg0"] = mlp::input(cpu);
  extra["y"] = mlp::input(cpu);
  expectError([&] { p.run(extra); }, "[runtime] MLP has no argument y", "");
}

// Rewrites a field of the entry's program table.
void editProgram(const std::string& entry, const std::function<void(nlohmann::json&)>& edit) {
  const fs::path meta = fs::path(entry) / "meta.json";
  nlohmann::json j = nlohmann::json::parse(readFile(meta));
  edit(j["program"]);
  writeFile(meta, j.dump());
}

TEST(Program, BadEntriesAreClearErrors) {
  radix::iotest::TempDir dir("program-bad");
  const Platform cpu = cachedIn(dir.path);
  const std::string good = compileMlp(cpu);
  auto copyOf = [&](const std::string& name) {
    const fs::path to = dir.path / name;
    fs::copy(good, to, fs::copy_options::recursive);
    return to.string();
  };
  expectError([&] { Program::load(cpu, (dir.path / "missing").string()); }, "[runtime] cannot load the entry (meta.json is missing)",
              "missing");

  const std::string target = copyOf("target");
  editProgram(target, [](nlohmann::json& p) { p["target"] = "cuda:sm_90a"; });
  expectError([&] { Program::load(cpu, target); }, "[runtime] the entry was compiled for target \"cuda:sm_90a\"", target);

  const std::string arch = copyOf("arch");
  editProgram(arch, [](nlohmann::json& p) { p["arch"] = "aarch64"; });
  expectError([&] { Program::load(cpu, arch); }, "[runtime] the entry was compiled for aarch64, this host is x86_64", arch);

  const std::string old = copyOf("old");
  {
    const fs::path meta = fs::path(old) / "meta.json";
    nlohmann::json j = nlohmann::json::parse(readFile(meta));
    j.erase("program");
    writeFile(meta, j.dump());
  }
  expectError([&] { Program::load(cpu, old); }, "[runtime] cannot load the entry (meta.json has no program table", "compile it again");

  const std::string leaves = copyOf("leaves");
  editProgram(leaves, [](nlohmann::json& p) { p["leaf_to_arg"][0] = 99; });
  expectError([&] { Program::load(cpu, leaves); }, "[runtime] cannot load the entry (meta.json's program table is corrupt",
              "leaf_to_arg out of range");

  const std::string shape = copyOf("shape");
  editProgram(shape, [](nlohmann::json& p) { p["args"][0]["dtype"] = "f7"; });
  expectError([&] { Program::load(cpu, shape); }, "[runtime] cannot load the entry (meta.json's program table is corrupt", "");

  const std::string object = copyOf("object");
  {
    std::string bytes = readFile(fs::path(object) / "entry.o");
    bytes[bytes.size() / 2] ^= 0x5a;
    writeFile(fs::path(object) / "entry.o", bytes);
  }
  expectError([&] { Program::load(cpu, object); }, "[runtime] cannot load the entry's code (corrupt (object checksum mismatch))",
              object);
}

TEST(Program, RefusesCodeForFeaturesTheCpuLacks) {
  const std::vector<std::string> amx = {"amx-tile", "amx-int8", "avx512fp16", "avx512bf16", "avx512f"};
  std::string lacking;
  for (const std::string& f : amx)
    if (!detail::missingCpuFeatures({f}).empty()) lacking = f;
  if (lacking.empty()) GTEST_SKIP() << "this CPU has every feature of graniterapids that the runtime checks";
  // Compiled for a CPU with them (code generation needs no such host), refused at load.
  radix::iotest::TempDir dir("program-features");
  const std::string entry = compileMlp(cachedIn(dir.path, {.targetCpu = "graniterapids"}));
  expectError([&] { Program::load(Platform::cpu(), entry); }, "[runtime] the entry was compiled for CPU graniterapids and uses",
              lacking);
}

// ---- the ELF linker ----

std::string mlpObject() {
  static const std::string bytes = [] {
    radix::iotest::TempDir dir("program-object");
    return readFile(fs::path(compileMlp(cachedIn(dir.path))) / "entry.o");
  }();
  return bytes;
}

std::string linkError(const std::string& bytes) {
  std::string why;
  auto linked = detail::LinkedObject::link(bytes, why);
  return linked ? "linked" : why;
}

TEST(ElfLinker, LinksTheCompilersObjects) {
  std::string why;
  auto linked = detail::LinkedObject::link(mlpObject(), why);
  ASSERT_TRUE(linked) << why;
  EXPECT_NE(linked->symbol(detail::kPackedEntry), nullptr);
  EXPECT_NE(linked->symbol(detail::kEntryKeySymbol), nullptr);
  EXPECT_EQ(linked->symbol("no_such_symbol"), nullptr);
  EXPECT_GT(linked->mappedBytes(), 0u);
}

TEST(ElfLinker, MalformedObjectsAreRefusedWithAReason) {
  const std::string good = mlpObject();
  Elf64_Ehdr eh;
  std::memcpy(&eh, good.data(), sizeof eh);
  auto patched = [&](size_t offset, const void* value, size_t n) {
    std::string b = good;
    std::memcpy(b.data() + offset, value, n);
    return b;
  };
  EXPECT_EQ(linkError(""), "corrupt (entry.o is shorter than an ELF header)");
  EXPECT_EQ(linkError(std::string(64, 'x')), "corrupt (entry.o is no object file)");
  const unsigned char class32 = ELFCLASS32;
  EXPECT_EQ(linkError(patched(EI_CLASS, &class32, 1)), "foreign (entry.o is not a 64-bit little-endian x86-64 object)");
  const uint16_t exec = ET_EXEC;
  EXPECT_EQ(linkError(patched(offsetof(Elf64_Ehdr, e_type), &exec, 2)), "foreign (entry.o is not a relocatable object)");
  const uint64_t farAway = uint64_t(1) << 40;
  EXPECT_EQ(linkError(patched(offsetof(Elf64_Ehdr, e_shoff), &farAway, 8)), "corrupt (entry.o's section table is out of bounds)");
  EXPECT_EQ(linkError(good.substr(0, good.size() / 2)).substr(0, 8), "corrupt ");

  // A relocation of a type the linker does not know, and a call into a symbol the process lacks.
  bool sawRela = false, sawUndefined = false;
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, good.data() + eh.e_shoff + size_t(i) * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_RELA && sh.sh_size >= sizeof(Elf64_Rela) && !sawRela) {
      Elf64_Rela r;
      std::memcpy(&r, good.data() + sh.sh_offset, sizeof r);
      // Only a relocation of a loaded section is applied (debug sections' are skipped).
      Elf64_Shdr target;
      std::memcpy(&target, good.data() + eh.e_shoff + size_t(sh.sh_info) * sizeof target, sizeof target);
      if (!(target.sh_flags & SHF_ALLOC)) continue;
      r.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), 250);
      EXPECT_EQ(linkError(patched(sh.sh_offset, &r, sizeof r)), "unsupported (entry.o has relocation type 250)");
      sawRela = true;
    }
    if (sh.sh_type == SHT_SYMTAB) {
      Elf64_Shdr str;
      std::memcpy(&str, good.data() + eh.e_shoff + size_t(sh.sh_link) * sizeof str, sizeof str);
      for (size_t s = 1; s < sh.sh_size / sizeof(Elf64_Sym) && !sawUndefined; ++s) {
        Elf64_Sym sym;
        std::memcpy(&sym, good.data() + sh.sh_offset + s * sizeof sym, sizeof sym);
        const char* name = good.data() + str.sh_offset + sym.st_name;
        if (sym.st_shndx != SHN_UNDEF || std::string_view(name) != "radix_kernel_contract") continue;
        std::string b = good;
        b[str.sh_offset + sym.st_name] = 'X';  // Xadix_kernel_contract
        EXPECT_EQ(linkError(b), "unloadable (entry.o calls Xadix_kernel_contract, which this process does not define)");
        sawUndefined = true;
      }
    }
  }
  EXPECT_TRUE(sawRela);
  EXPECT_TRUE(sawUndefined);
}

// Random byte flips over a real object: each is linked (and unlinked) or refused, never a crash.
// The code is never run: a cache entry's object is checked against meta.json's hash first.
TEST(ElfLinker, SurvivesRandomCorruption) {
  const std::string good = mlpObject();
  std::mt19937_64 rng(7);
  int refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string b = good;
    // Most flips in the headers and tables, where they matter most.
    const size_t n = 1 + rng() % 4;
    for (size_t k = 0; k < n; ++k) {
      const size_t at = (rng() % 2) ? rng() % std::min<size_t>(b.size(), 64) : rng() % b.size();
      b[at] = static_cast<char>(rng());
    }
    Elf64_Ehdr eh;
    std::memcpy(&eh, good.data(), sizeof eh);
    if (rng() % 2 && eh.e_shoff < b.size()) b[eh.e_shoff + rng() % (b.size() - eh.e_shoff)] = static_cast<char>(rng());
    refused += linkError(b) != "linked";
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
