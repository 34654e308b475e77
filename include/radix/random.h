#pragma once
/// Random numbers and token sampling. radix::Rng is a counter-based generator (Philox4x32-10 of
/// Random123) whose whole state is a Tensor: each draw returns the new generator with the values,
/// so a generator threads through traced code, radix::call and compiled executables like any
/// other Tensor. auto [rng2, noise] = rng.normal(Shape({b, d}, DType::f32));
#include <cstdint>
#include <source_location>

#include "radix/platform.h"
#include "radix/shape.h"
#include "radix/tensor.h"

namespace radix {

struct RngDraw;

/// A Philox4x32-10 generator. `state` is {6}:u32: a 128-bit counter (4 words, least significant
/// first) then a 64-bit key (2 words). A draw that needs m 32-bit words uses the blocks of the
/// counters c, c+1, ..., c+ceil(m/4)-1 and returns the generator with the counter advanced past
/// them, so one state never yields the same numbers twice. Values are a deterministic function of
/// the state and the shape; a default-constructed Rng is a shape-only placeholder for compile.
struct Rng {
  using Loc = radix::Loc;

  Tensor state = Tensor(stateShape());

  /// The state's shape: {6}:u32.
  static Shape stateShape();
  /// A bound generator on `platform` with key `seed` and counter 0: Rng::init(cpu, 42)
  static Rng init(const Platform& platform, uint64_t seed);
  /// The same inside a trace, as a constant: Rng::init(42)
  static Rng init(uint64_t seed, Loc loc = Loc::current());

  /// Uniform random bits in an integer dtype (64-bit types take two words per element).
  /// rng.bitGenerator(Shape({4}, DType::u32)) -> {rng', {4}:u32}
  RngDraw bitGenerator(const Shape& shape, Loc loc = Loc::current()) const;
  /// Uniform floats in [lo, hi) of the shape's float dtype (f32/f16/bf16/f64): 24 random bits for
  /// f32, 53 for f64, as many as the dtype holds for f16/bf16. rng.uniform(Shape({8}, f16), -1, 1)
  RngDraw uniform(const Shape& shape, double lo = 0, double hi = 1, Loc loc = Loc::current()) const;
  /// Normal floats (Box-Muller, computed in f32, or f64 for f64): rng.normal(Shape({8}, f32), 0, 2)
  RngDraw normal(const Shape& shape, double mean = 0, double stddev = 1, Loc loc = Loc::current()) const;
  /// Standard Gumbel noise -log(-log u), u in (0, 1): rng.gumbel(Shape({8}, f32))
  RngDraw gumbel(const Shape& shape, Loc loc = Loc::current()) const;
  /// Draws an index along `axis` with probabilities softmax(logits) (Gumbel-max); the axis is
  /// removed: rng.categorical({b=2,voc=7}, "voc") -> {rng', {b=2}:i32}
  RngDraw categorical(const Tensor& logits, Axis axis, Loc loc = Loc::current()) const;
};

/// A draw: the advanced generator and the values.
struct RngDraw {
  Rng rng;
  Tensor values;
};

/// How sampleTokens picks a token.
struct SamplingOptions {
  /// 0: greedy (argmax, first index on ties); otherwise logits are divided by it.
  double temperature = 1;
  /// Keep only the topK largest logits; 0 keeps all.
  int64_t topK = 0;
  /// Then keep the smallest set of most likely tokens whose probability reaches topP (the most
  /// likely one always stays); 1 keeps all. In (0, 1].
  double topP = 1;
};

/// sampleTokens' result: i32 tokens and the advanced generator.
struct SampledTokens {
  Tensor tokens;
  Rng rng;
};

/// Samples one token per row of `logits` (any float dtype) along the axis tagged "voc", or the
/// last axis; that axis is removed. Greedy draws nothing and returns `rng` unchanged.
/// sampleTokens({b=4,voc=50257}, {.temperature = 0.7, .topK = 40, .topP = 0.9}, rng) -> {{b=4}:i32, rng'}
SampledTokens sampleTokens(const Tensor& logits, const SamplingOptions& options, const Rng& rng,
                           Loc loc = Loc::current());

}  // namespace radix
