// Shape ops (broad, broadcast, reshape, transpose) against naive references.
#include "ops_testing.h"

namespace opstest {
namespace {

std::vector<Case> layoutCases() {
  const auto F = kFloats;
  return {
      {"broad_right_aligned", {sh({17})}, broadOp(sh({3, 17})), broadcastRef({3, 17}, {1}), sh({3, 17}), F},
      {"broad_right_aligned_size1", {sh({1, 3})}, broadOp(sh({17, 5, 3})), broadcastRef({17, 5, 3}, {1, 2}), sh({17, 5, 3}), F},
      {"broad_same_rank", {sh({3, 1})}, broadOp(sh({3, 17})), broadcastRef({3, 17}, {0, 1}), sh({3, 17}), F},
      {"broad_scalar", {sh({})}, broadOp(sh({17, 1, 3})), broadcastRef({17, 1, 3}, {}), sh({17, 1, 3}), F},
      // Tags in another order than the target's: needs a transpose.
      {"broad_tags", {sh({3, 2}, {"d", "b"})}, broadOp(sh({2, 5, 3}, {"b", "s", "d"})), broadcastRef({2, 5, 3}, {2, 0}), sh({2, 5, 3}, {"b", "s", "d"}), F},
      {"broad_tags_size1", {sh({1}, {"d"})}, broadOp(sh({4, 3}, {"b", "d"})), broadcastRef({4, 3}, {1}), sh({4, 3}, {"b", "d"}), F},
      {"broadcast_leading", {sh({3})}, broadcastOp(sh({3, 17}), {0}), broadcastRef({3, 17}, {0}), sh({3, 17}), F},
      {"broadcast_transposing", {sh({3, 17})}, broadcastOp(sh({17, 5, 3}), {2, 0}), broadcastRef({17, 5, 3}, {2, 0}), sh({17, 5, 3}), F},
      {"broadcast_transposing_size1", {sh({1, 17})}, broadcastOp(sh({17, 3}), {1, 0}), broadcastRef({17, 3}, {1, 0}), sh({17, 3}), F},
      {"broadcast_scalar", {sh({})}, broadcastOp(sh({129}), {}), broadcastRef({129}, {}), sh({129}), F},
      {"broadcast_tagged_target", {sh({3})}, broadcastOp(sh({2, 3}, {"b", "d"}), {1}), broadcastRef({2, 3}, {1}), sh({2, 3}, {"b", "d"}), F},

      {"reshape_2d", {sh({3, 17})}, reshapeOp({17, 3}), sameValues(), sh({17, 3}), F},
      {"reshape_split", {sh({129})}, reshapeOp({3, 43}), sameValues(), sh({3, 43}), F},
      {"reshape_flatten_drops_tags", {sh({17, 1, 3}, {"a", "b", "c"})}, reshapeOp({51}), sameValues(), sh({51}), F},
      {"reshape_from_scalar", {sh({})}, reshapeOp({1, 1}), sameValues(), sh({1, 1}), F},
      {"reshape_scalar_to_rank1", {sh({})}, reshapeOp({1}), sameValues(), sh({1}), F},
      {"reshape_rank1_to_scalar", {sh({1})}, reshapeOp({}), sameValues(), sh({}), F},
      {"reshape_to_scalar", {sh({1, 1, 1})}, reshapeOp({}), sameValues(), sh({}), F},

      {"transpose_2d", {sh({3, 17})}, transposeOp({1, 0}), transposeRef({1, 0}), sh({17, 3}), F},
      {"transpose_3d", {sh({17, 1, 3})}, transposeOp({2, 0, 1}), transposeRef({2, 0, 1}), sh({3, 17, 1}), F},
      {"transpose_negative", {sh({3, 4, 17})}, transposeOp({1, -1, 0}), transposeRef({1, 2, 0}), sh({4, 17, 3}), F},
      {"transpose_tags", {sh({3, 17, 2}, {"b", "s", "d"})}, transposeOp({"d", "b", "s"}), transposeRef({2, 0, 1}), sh({2, 3, 17}, {"d", "b", "s"}), F},
      {"transpose_scalar", {sh({})}, transposeOp({}), transposeRef({}), sh({}), F},
      {"withTags", {sh({3, 17})}, [](const Ts& x) { return x[0].withTags({"b", "d"}); }, sameValues(), sh({3, 17}, {"b", "d"}), F},
  };
}

std::vector<ErrorCase> errorCases() {
  [[maybe_unused]] const DType f16 = DType::f16, i32 = DType::i32, b = DType::bool_;
  return {
      {"broad_smaller", {sh({3, 17})}, [](const Ts& x) { return x[0].broad(sh({17})); }, "[broad]", "{3,17}:f32 to smaller {17}:f32"},
      {"broad_tags_differ", {sh({3}, {"a"})}, [](const Ts& x) { return x[0].broad(sh({3}, {"d"})); }, "[broad]", "{a=3}:f32 to {d=3}:f32"},
      {"broad_unknown_tag", {sh({3}, {"a"})}, [](const Ts& x) { return x[0].broad(sh({2, 3}, {"b", "d"})); }, "[broad]", "no axis tagged \"a\" in {b=2,d=3}:f32"},
      {"broad_sizes", {sh({3})}, [](const Ts& x) { return x[0].broad(sh({2, 4})); }, "[broad]", "axis 0 of {3}:f32 to axis 1 of {2,4}:f32"},
      {"broadcast_sizes", {sh({3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {1}); }, "[broadcast]", "axis 0 of {3}:f32 to axis 1 of {3,17}:f32"},
      {"broadcast_axis_count", {sh({3, 17})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {0}); }, "[broadcast]", "1 axes for {3,17}:f32"},
      {"broadcast_axis_range", {sh({3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 17}), {2}); }, "[broadcast]", "axis 2 out of range for {3,17}:f32"},
      {"broadcast_axis_twice", {sh({3, 3})}, [](const Ts& x) { return x[0].broadcast(sh({3, 3}), {1, 1}); }, "[broadcast]", "{3,3}:f32 is targeted twice"},
      {"reshape_count", {sh({3, 17})}, [](const Ts& x) { return x[0].reshape({50}); }, "[reshape]", "{3,17}:f32 (51 elements) to {50}:f32"},
      {"transpose_duplicate", {sh({3, 17})}, [](const Ts& x) { return x[0].transpose({0, 0}); }, "[transpose]", "axis 0 appears twice in the permutation of {3,17}:f32"},
      {"transpose_length", {sh({3, 17})}, [](const Ts& x) { return x[0].transpose({0}); }, "[transpose]", "1 axes in the permutation of {3,17}:f32"},
      {"transpose_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].transpose({"d", "x"}); }, "[transpose]", "no axis tagged \"x\" in {b=3,d=17}:f32"},
  };
}

}  // namespace

RADIX_OPS_CASES("layout", layoutCases);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest
