// radix-bert: a BERT-style encoder over radix::nn, run on a padded batch of token ids.
//   radix-bert                                        random weights, random ids
//   radix-bert model.safetensors HEADS [io.safetensors]
// model.safetensors is a Hugging Face BertModel state_dict; io.safetensors holds "input_ids" and
// "token_type_ids" {b,s}, "lengths" {b}, and optionally "last_hidden_state" and "pooler_output",
// which the results are checked against.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "bert/bert.h"
#include "random_weights.h"

int main(int argc, char** argv) try {
  radix::Platform cpu = radix::Platform::cpu();
  bert::Bert model;
  if (argc > 2) {
    radix::io::Checkpoint ckpt = radix::io::Checkpoint::open(argv[1]);
    model = bert::placeholders(bert::configOf(ckpt, std::atoi(argv[2])));
    radix::io::LoadSpec spec;
    spec.ignoreExtra = {"position_ids$"};  // a buffer some transformers versions save
    for (const std::string& note : radix::io::loadInto(cpu, model, ckpt, spec).notes) std::printf("note: %s\n", note.c_str());
  } else if (argc == 1) {
    model = bert::placeholders({});
    examples::randomize(cpu, model, 1);
  } else {
    std::fprintf(stderr, "usage: radix-bert [model.safetensors HEADS [io.safetensors]]\n");
    return 2;
  }
  std::optional<radix::io::Checkpoint> io;
  if (argc > 3) io = radix::io::Checkpoint::open(argv[3]);
  using radix::DType;
  using radix::Shape;
  using radix::Tensor;
  const Tensor ids = io ? io->load(cpu, "input_ids", DType::i32)
                        : Tensor::fromValues(cpu, Shape({2, 6}, DType::i32), std::vector<int>{5, 17, 42, 8, 3, 9, 7, 21, 4, 0, 0, 0});
  const Tensor types = io ? io->load(cpu, "token_type_ids", DType::i32) : Tensor::fromValues(cpu, Shape({2, 6}, DType::i32), std::vector<int>(12, 0));
  const Tensor lengths = io ? io->load(cpu, "lengths", DType::i32) : Tensor::fromValues(cpu, Shape({2}, DType::i32), std::vector<int>{6, 3});
  auto exe = radix::compile(cpu, &bert::Bert::forward, model, ids, types, lengths);
  const bert::Output out = exe(model, ids, types, lengths);
  const std::vector<float> pooled = out.pooler_output.toVector<float>();
  std::printf("last_hidden_state %s, pooler_output %s:", out.last_hidden_state.shape().str().c_str(),
              out.pooler_output.shape().str().c_str());
  for (size_t i = 0; i < pooled.size() && i < 8; ++i) std::printf(" %.5f", pooled[i]);
  std::printf("%s\n", pooled.size() > 8 ? " ..." : "");
  if (io && io->find("last_hidden_state") && io->find("pooler_output")) {
    double worst = 0;
    for (auto [name, got] : {std::pair{"last_hidden_state", out.last_hidden_state}, std::pair{"pooler_output", out.pooler_output}}) {
      const std::vector<float> want = io->load(cpu, name, DType::f32).toVector<float>(), y = got.toVector<float>();
      if (want.size() != y.size()) worst = INFINITY;
      for (size_t i = 0; i < want.size() && i < y.size(); ++i) worst = std::fmax(worst, std::fabs(want[i] - y[i]));
    }
    std::printf("max |error| against the expected outputs: %g\n", worst);
    return worst <= 1e-4 ? 0 : 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "radix-bert: %s\n", e.what());
  return 2;
}
