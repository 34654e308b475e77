#pragma once
// Llama 1/2's vocabulary as llama-tokenizer-js ships it (scripts/tokenizer-data writes it to
// build/npm/expected/llama2-vocab.json), as a VocabSpec: shared by tests/tokenizer_test.cpp and
// bench/tokenizer_bench.cpp.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "radix/tokenizer.h"

namespace radix::tokenizertest {

/// Tokens by id and merges by priority, which HF's converter made from the model's scores.
/// Scores come back from the merges: a piece scores minus the rank of the first merge that makes
/// it (pieces no merge makes: -1e9).
inline VocabSpec llama2VocabFromJs(const std::string& jsonText) {
  const nlohmann::json j = nlohmann::json::parse(jsonText);
  VocabSpec spec;
  spec.model = "llama";
  spec.pre = "default";
  spec.tokens = j["tokens"].get<std::vector<std::string>>();
  std::unordered_map<std::string, int32_t> ids;
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    ids.emplace(spec.tokens[id], static_cast<int32_t>(id));
    spec.types.push_back(id == 0 ? 2 : id <= 2 ? 3 : id <= 258 ? 6 : 1);
  }
  spec.scores.assign(spec.tokens.size(), -1e9f);
  const auto merges = j["merges"].get<std::vector<std::string>>();
  for (size_t rank = merges.size(); rank-- > 0;) {
    std::string merged = merges[rank];
    merged.erase(merged.find(' '), 1);
    if (auto it = ids.find(merged); it != ids.end()) spec.scores[it->second] = -static_cast<float>(rank);
  }
  spec.unk = 0;
  spec.bos = 1;
  spec.eos = 2;
  return spec;
}

}  // namespace radix::tokenizertest
