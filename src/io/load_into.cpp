// loadInto: maps a model's leaf paths to stored names, checks shapes and dtypes, reports every
// problem in one message (with "did you mean" for prefixes), and binds the tensors.
#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "io/io.h"
#include "radix/detail/trace.h"
#include "runtime/runtime.h"

namespace radix::io {

// ---------------------------------------------------------------------------------------------
// loadInto

std::string defaultStoredName(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (c == '[') {
      if (!out.empty() && out.back() != '.') out += '.';
    } else if (c == ']') {
      if (i + 1 < path.size() && path[i + 1] != '.' && path[i + 1] != '[') out += '.';
    } else {
      out += c;
    }
  }
  return out;
}

namespace detail {

namespace {

bool isPyTorchOnly(std::string_view name) {
  constexpr std::string_view kCount = "num_batches_tracked";
  return name == kCount || (name.ends_with(kCount) && name[name.size() - kCount.size() - 1] == '.');
}

/// "did you mean" hints for missing names that an extra name ends with (the checkpoint has a
/// prefix, such as "module.") or that end with an extra name (the model has one). Appends the hint
/// to each missing line and returns a closing line naming the commonest prefix, or "".
std::string prefixHints(const std::vector<std::pair<std::string, size_t>>& missing, const std::vector<std::string>& extras,
                        std::vector<std::string>& problems) {
  std::map<std::string, std::string> bySuffix;  // every dotted suffix of an extra name -> that name
  std::set<std::string> extraSet(extras.begin(), extras.end());
  for (const std::string& e : extras)
    for (size_t i = e.find('.'); i != std::string::npos; i = e.find('.', i + 1)) bySuffix.emplace(e.substr(i + 1), e);
  std::map<std::string, int> storedPrefixes, modelPrefixes;
  for (const auto& [name, line] : missing) {
    std::string guess;
    if (auto it = bySuffix.find(name); it != bySuffix.end()) {
      guess = it->second;
      ++storedPrefixes[guess.substr(0, guess.size() - name.size())];
    } else {
      for (size_t i = name.find('.'); i != std::string::npos && guess.empty(); i = name.find('.', i + 1))
        if (extraSet.count(name.substr(i + 1))) {
          guess = name.substr(i + 1);
          ++modelPrefixes[name.substr(0, i + 1)];
        }
    }
    if (!guess.empty()) problems[line] += "; did you mean \"" + guess + "\"?";
  }
  auto commonest = [](const std::map<std::string, int>& m) {
    return std::max_element(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  };
  if (!storedPrefixes.empty() && (modelPrefixes.empty() || commonest(storedPrefixes)->second >= commonest(modelPrefixes)->second))
    return "did you mean LoadSpec::prefixes with \"" + commonest(storedPrefixes)->first +
           "\"? The checkpoint's names start with it";
  if (!modelPrefixes.empty())
    return "did you mean to load into the model's member \"" + commonest(modelPrefixes)->first.substr(0, commonest(modelPrefixes)->first.size() - 1) +
           "\"? The checkpoint's names lack the model's leading \"" + commonest(modelPrefixes)->first +
           "\" (or strip it in LoadSpec::rename)";
  return "";
}

}  // namespace

LoadReport bindLeaves(const Platform& platform, std::vector<Leaf>& leaves, const Checkpoint& checkpoint, const LoadSpec& spec) {
  const Checkpoint::Impl& impl = *checkpoint.impl();
  std::vector<std::regex> ignore;
  for (const std::string& r : spec.ignoreExtra) {
    try {
      ignore.emplace_back(r, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw Error("[load] LoadSpec::ignoreExtra: invalid regex \"" + r + "\": " + e.what());
    }
  }
  std::vector<std::string> problems;
  std::vector<std::pair<std::string, size_t>> missing;  // stored name, its line in problems
  std::vector<std::string> extras, pytorchOnly;
  LoadReport report;
  std::vector<size_t> found(leaves.size(), SIZE_MAX);
  // Sharded placeholders on a platform partitioned over processes load this process's block only.
  const int partitions = radix::detail::shardedAcrossProcesses(platform) ? platform.sharding().numPartitions : 1;
  std::vector<bool> claimed(impl.tensors.size(), false);
  uint64_t total = 0;
  for (size_t l = 0; l < leaves.size(); ++l) {
    const Leaf& leaf = leaves[l];
    const std::string stored = spec.rename ? spec.rename(leaf.path) : defaultStoredName(leaf.path);
    size_t index = SIZE_MAX;
    std::vector<std::string> prefixes = spec.prefixes;
    if (std::find(prefixes.begin(), prefixes.end(), "") == prefixes.end()) prefixes.insert(prefixes.begin(), "");
    for (const std::string& p : prefixes) {
      auto it = impl.byName.find(p + stored);
      if (it != impl.byName.end()) {
        index = it->second;
        break;
      }
    }
    const Shape& want = leaf.tensor->shape();
    if (index == SIZE_MAX) {
      missing.push_back({stored, problems.size()});
      problems.push_back("missing: \"" + stored + "\" for " + leaf.path + " " + want.str() + " is not in the checkpoint");
      continue;
    }
    claimed[index] = true;
    const TensorInfo& t = impl.tensors[index];
    const int64_t shardAxis = partitions > 1 ? radix::detail::shardedAxis(want, "load") : -1;
    if (shardAxis >= 0 && want.dim(shardAxis) % partitions != 0) {
      problems.push_back("shard: " + leaf.path + " " + want.str() + ": axis " + std::to_string(shardAxis) + " of size " +
                         std::to_string(want.dim(shardAxis)) + " is sharded over " + std::to_string(partitions) +
                         " partitions, which do not divide it");
      continue;
    }
    if (t.quant != QuantType::none) {
      // Packed blocks for a u8 {rows, rowBytes} placeholder (a quantized nn::Linear/Embedding),
      // else decoded on the host into a float placeholder of the logical dims.
      int64_t rows = 1;
      for (size_t d = 0; d + 1 < t.dims.size(); ++d) rows *= t.dims[d];
      const std::vector<int64_t> packed = {rows, rowBytes(t.quant, t.dims.empty() ? 1 : t.dims.back())};
      const bool asBlocks = want.dtype() == DType::u8 && want.dims() == packed;
      if (!asBlocks && (t.dims != want.dims() || !isFloat(want.dtype()))) {
        problems.push_back("shape: \"" + t.name + "\" for " + leaf.path + ": the model expects " + dimsStr(want.dims()) + " (" +
                           want.str() + "), the checkpoint has " + dimsStr(t.dims) + " " + t.type + " (packed " +
                           dimsStr(packed) + " u8)");
        continue;
      }
      if (partitions > 1 && asBlocks && want.isSharded(1) && t.dims.size() == 2 &&
          t.dims[1] % (partitions * blockElems(t.quant)) != 0) {
        problems.push_back("shard: \"" + t.name + "\" for " + leaf.path + " is " + t.type + " " + dimsStr(t.dims) +
                           ": splitting its rows of " + std::to_string(t.dims[1]) + " over " + std::to_string(partitions) +
                           " partitions would cut its " + std::to_string(blockElems(t.quant)) +
                           "-element blocks (shard the other axis, or load it as floats)");
        continue;
      }
      found[l] = index;
      total += t.bytes;
      continue;
    }
    if (t.dims != want.dims()) {
      problems.push_back("shape: \"" + t.name + "\" for " + leaf.path + ": the model expects " + dimsStr(want.dims()) +
                         " (" + want.str() + "), the checkpoint has " + dimsStr(t.dims) + " " + t.type);
      continue;
    }
    if (!t.dtype) {
      problems.push_back("dtype: \"" + t.name + "\" for " + leaf.path + " is " + t.type + ", which Radix cannot compute in yet");
      continue;
    }
    found[l] = index;
    total += t.bytes;
  }
  for (size_t i = 0; i < impl.tensors.size(); ++i) {
    if (claimed[i]) continue;
    const TensorInfo& t = impl.tensors[i];
    bool ignored = false;
    for (const std::regex& r : ignore) ignored = ignored || std::regex_search(t.name, r);
    if (!ignored && spec.ignorePyTorchOnly && isPyTorchOnly(t.name)) {
      pytorchOnly.push_back(t.name);
      ignored = true;
    }
    if (ignored) {
      report.ignored.push_back(t.name);
      continue;
    }
    extras.push_back(t.name);
    problems.push_back("extra: \"" + t.name + "\" " + dimsStr(t.dims) + " " + t.type + " is not claimed by the model");
  }
  if (!problems.empty()) {
    const size_t count = problems.size();
    const std::string hint = prefixHints(missing, extras, problems);
    std::string msg = "[load] " + std::to_string(count) + " problem" + (count > 1 ? "s" : "") + " mapping " +
                      (impl.sources.size() == 1 ? impl.sources[0].label : impl.folder) + " onto the model:";
    for (const std::string& p : problems) msg += "\n  " + p;
    if (!hint.empty()) msg += "\n  " + hint;
    throw Error(msg);
  }
  if (!pytorchOnly.empty()) {
    std::string note = "ignored " + std::to_string(pytorchOnly.size()) + " PyTorch-only tensor" +
                       (pytorchOnly.size() > 1 ? "s" : "") + " (num_batches_tracked):";
    for (size_t i = 0; i < pytorchOnly.size() && i < 8; ++i) note += (i ? ", " : " ") + pytorchOnly[i];
    if (pytorchOnly.size() > 8) note += ", ... (" + std::to_string(pytorchOnly.size() - 8) + " more)";
    report.notes.push_back(note);
  }
  ProgressBar bar(impl.progress, total);
  WeightArena arena;
  std::vector<Tensor> loaded(leaves.size());
  for (size_t l = 0; l < leaves.size(); ++l) {
    const TensorInfo& t = impl.tensors[found[l]];
    const Shape& want = leaves[l].tensor->shape();
    std::optional<DType> dtype;
    if (t.quant != QuantType::none) dtype = want.dtype();
    else if (spec.dtype && isFloat(*t.dtype)) dtype = spec.dtype;
    const int64_t shardAxis = partitions > 1 ? radix::detail::shardedAxis(want, "load") : -1;
    if (shardAxis >= 0) {
      loaded[l] = loadShard(impl, found[l], platform, dtype, want, shardAxis, partitions, platform.partitionIndex(), &bar);
      continue;
    }
    Tensor x = loadOne(impl, found[l], platform, dtype, &bar, &arena);
    std::vector<Tag> tags;
    for (int64_t a = 0; a < want.rank(); ++a) tags.push_back(want.tag(a));
    x = x.withTags(tags);
    for (int64_t a = 0; a < want.rank(); ++a)
      if (want.isSharded(a)) x = x.withSharding({a});
    loaded[l] = x;
  }
  for (size_t l = 0; l < leaves.size(); ++l) {
    // A model's weights: packed whole for the GEMM kernels on their first use (runtime.h).
    if (const auto& b = radix::detail::TensorAccess::buffer(loaded[l]); b && b->storage) b->storage->weight = true;
    *leaves[l].tensor = std::move(loaded[l]);
  }
  return report;
}

}  // namespace detail

}  // namespace radix::io
