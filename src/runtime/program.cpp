// radix::Program: a cache entry loaded without the compiler (docs/aot.md).
#include "radix/runtime.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "radix/cache.h"
#include "radix/detail/trace.h"
#include "runtime/cache.h"
#include "runtime/executable.h"
#include "runtime/mpi.h"
#include "runtime/profiler.h"
#include "runtime/runtime.h"

namespace radix {
namespace {

namespace fs = std::filesystem;

// LLVM's names of the features that decide which instructions compiled code and the kernels
// use, with /proc/cpuinfo's names for them.
constexpr std::pair<const char*, const char*> kCheckedFeatures[] = {
    {"sse4.2", "sse4_2"},          {"avx", "avx"},
    {"avx2", "avx2"},              {"fma", "fma"},
    {"f16c", "f16c"},              {"bmi2", "bmi2"},
    {"avx512f", "avx512f"},        {"avx512bw", "avx512bw"},
    {"avx512vl", "avx512vl"},      {"avx512dq", "avx512dq"},
    {"avx512cd", "avx512cd"},      {"avx512vbmi", "avx512vbmi"},
    {"avx512bf16", "avx512_bf16"}, {"avx512vnni", "avx512_vnni"},
    {"avxvnni", "avx_vnni"},       {"avx512fp16", "avx512_fp16"},
    {"amx-tile", "amx_tile"},      {"amx-bf16", "amx_bf16"},
    {"amx-int8", "amx_int8"},
};

// The CPU's flags as the kernel reports them; empty when /proc/cpuinfo can't be read.
const std::set<std::string>& hostFlags() {
  static const std::set<std::string> flags = [] {
    std::set<std::string> out;
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("flags", 0) != 0) continue;
      std::istringstream words(line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1));
      for (std::string w; words >> w;) out.insert(w);
      break;
    }
    return out;
  }();
  return flags;
}

std::string fail(const std::string& what, const std::string& path) { return "[runtime] " + what + ": " + path; }

}  // namespace

std::vector<std::string> detail::missingCpuFeatures(const std::vector<std::string>& features) {
  const auto& flags = hostFlags();
  std::vector<std::string> missing;
  if (flags.empty()) return missing;
  for (const std::string& f : features)
    for (const auto& [llvmName, cpuinfoName] : kCheckedFeatures)
      if (f == llvmName && !flags.count(cpuinfoName)) missing.push_back(f);
  return missing;
}

Program Program::load(const Platform& platform, const std::string& entryDir) {
  std::string why;
  std::optional<detail::ProgramEntry> entry = detail::readProgramEntry(entryDir, why);
  if (!entry) throw Error(fail("cannot load the entry (" + why + ")", entryDir));
  if (entry->target != platform.target())
    throw Error(fail("the entry was compiled for target \"" + entry->target + "\", not for this platform's \"" +
                         std::string(platform.target()) + "\"",
                     entryDir));
  if (entry->arch != detail::hostArch())
    throw Error(fail("the entry was compiled for " + entry->arch + ", this host is " + detail::hostArch(), entryDir));
  if (const auto missing = detail::missingCpuFeatures(entry->features); !missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    throw Error(fail("the entry was compiled for CPU " + entry->cpu + " and uses " + names +
                         ", which this CPU lacks: compile it for this host's CPU (radix compile --target-cpu)",
                     entryDir));
  }
  const detail::Signature& sig = entry->signature;
  if (sig.partitions > 1 && (!detail::shardedAcrossProcesses(platform) || platform.sharding().numPartitions != sig.partitions))
    throw Error(fail("the entry is partitioned over " + std::to_string(sig.partitions) +
                         " processes: load it on a platform withSharding({.numPartitions = " + std::to_string(sig.partitions) +
                         "}) under mpirun",
                     entryDir));
  std::optional<detail::LoadedObject> loaded = detail::loadEntryObject(entryDir, entry->key, sig.resultShapes.size(), why);
  if (!loaded) throw Error(fail("cannot load the entry's code (" + why + ")", entryDir));
  detail::CompiledCode code;
  code.entry = reinterpret_cast<detail::PackedEntry>(loaded->entry);
  code.owner = loaded->owner;
  code.fromCache = true;
  code.resultAlias = std::move(loaded->resultAlias);
  code.entryDir = entryDir;
  detail::placeOn(code, platform, entry->target, entry->name);
  if (loaded->profileSites)
    if (auto sites = detail::parseProfileSites(*loaded->profileSites)) code.profile = detail::makeProfileTable(std::move(*sites));
  std::string mlir;
  if (auto text = detail::readRegularFile((fs::path(entryDir) / "module.mlir").string(), size_t(1) << 30).data) mlir = std::move(*text);
  Program p;
  p.path_ = entryDir;
  p.name_ = entry->name;
  for (size_t i = 0; i < sig.leafToArg.size(); ++i) {
    p.argShapes_.push_back(sig.argShapes[static_cast<size_t>(sig.leafToArg[i])]);
    p.argPaths_.push_back(i < sig.leafPaths.size() ? sig.leafPaths[i] : "arg" + std::to_string(i));
  }
  p.executable_ = detail::makeCpuExecutable(std::move(mlir), entry->signature, std::move(code));
  return p;
}

Program Program::find(const Platform& platform, const std::string& name, const std::vector<Shape>& argumentShapes,
                      const std::string& cacheRoot) {
  const std::string root = cacheRoot.empty() ? radix::cacheDir() : cacheRoot;
  if (root.empty()) throw Error("[runtime] no cache folder: RADIX_CACHE_DIR is off; give Program::find a folder");
  const fs::path dir = fs::path(root) / std::string(platform.target());
  std::vector<std::pair<fs::file_time_type, std::string>> candidates;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string folder = e.path().filename().string();
    // <name>_<16 hex digits>
    if (!e.is_directory(ec) || folder.size() != name.size() + 17 || folder.compare(0, name.size(), name) != 0 ||
        folder[name.size()] != '_' ||
        !std::all_of(folder.begin() + static_cast<std::ptrdiff_t>(name.size()) + 1, folder.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }))
      continue;
    std::string why;
    auto entry = detail::readProgramEntry(e.path().string(), why);
    if (!entry) continue;
    if (!argumentShapes.empty()) {
      const auto& sig = entry->signature;
      bool same = argumentShapes.size() == sig.leafToArg.size();
      for (size_t i = 0; same && i < argumentShapes.size(); ++i)
        same = argumentShapes[i].sameDimsAndDtype(sig.argShapes[static_cast<size_t>(sig.leafToArg[i])]);
      if (!same) continue;
    }
    candidates.emplace_back(fs::last_write_time(e.path() / "meta.json", ec), e.path().string());
  }
  if (candidates.empty()) {
    std::string shapes;
    for (const Shape& s : argumentShapes) shapes += (shapes.empty() ? "" : ", ") + s.str();
    throw Error("[runtime] no loadable entry named \"" + name + "\"" +
                (shapes.empty() ? "" : " taking (" + shapes + ")") + " under " + dir.string() +
                " (`radix cache ls` lists the entries; `radix compile` writes them)");
  }
  std::sort(candidates.begin(), candidates.end());
  return load(platform, candidates.back().second);
}

const std::vector<Shape>& Program::resultShapes() const { return executable_->signature().resultShapes; }

std::vector<Tensor> Program::run(const std::vector<Tensor>& args) const {
  std::vector<const Tensor*> leaves;
  for (const Tensor& t : args) leaves.push_back(&t);
  return runLeaves(leaves);
}

std::vector<Tensor> Program::runLeaves(const std::vector<const Tensor*>& leaves) const {
  if (leaves.size() != argShapes_.size())
    throw Error("[runtime] " + name_ + " takes " + std::to_string(argShapes_.size()) + " tensors, got " +
                std::to_string(leaves.size()));
  return executable_->run(leaves, [&](size_t i) { return argPaths_.at(i); });
}

std::vector<Tensor> Program::run(const std::map<std::string, Tensor>& args) const {
  std::vector<Tensor> ordered;
  for (const std::string& path : argPaths_) {
    auto it = args.find(path);
    if (it == args.end()) throw Error("[runtime] " + name_ + " takes " + path + ", which the call does not give");
    ordered.push_back(it->second);
  }
  for (const auto& [path, tensor] : args)
    if (std::find(argPaths_.begin(), argPaths_.end(), path) == argPaths_.end())
      throw Error("[runtime] " + name_ + " has no argument " + path);
  return run(ordered);
}

}  // namespace radix
