// Contractions (dotGeneral, dot) against a naive reference.
#include "ops_testing.h"

namespace opstest {
namespace {

std::vector<Case> contractionCases() {
  const auto F = kFloats;
  const std::vector<Tag> bmk = {"b", "m", "k"}, bkn = {"b", "k", "n"}, bmn = {"b", "m", "n"};
  return {
      {"dotGeneral_matvec", {sh({3, 17}), sh({17})}, dotGeneralOp({{-1, 0}}, {}), dotRef({{1, 0}}, {}), sh({3}), F},
      {"dotGeneral_matmul", {sh({3, 17}), sh({17, 5})}, dotGeneralOp({{1, 0}}, {}), dotRef({{1, 0}}, {}), sh({3, 5}), F},
      {"dotGeneral_inner129", {sh({129}), sh({129})}, dotGeneralOp({{0, 0}}, {}), dotRef({{0, 0}}, {}), sh({}), F, -1, 1},
      {"dotGeneral_batched_tags", {sh({4, 3, 17}, bmk), sh({4, 17, 5}, bkn)}, dotGeneralOp({{"k", "k"}}, {{"b", "b"}}), dotRef({{2, 1}}, {{0, 0}}), sh({4, 3, 5}, bmn), F},
      {"dotGeneral_batched_rhs_last", {sh({3, 4, 17}), sh({17, 5, 4})}, dotGeneralOp({{2, 0}}, {{1, 2}}), dotRef({{2, 0}}, {{1, 2}}), sh({4, 3, 5}), F},
      {"dotGeneral_two_contracting", {sh({3, 17, 2}), sh({2, 5, 17})}, dotGeneralOp({{1, 2}, {2, 0}}, {}), dotRef({{1, 2}, {2, 0}}, {}), sh({3, 5}), F},
      {"dotGeneral_negative_axes", {sh({17, 3}), sh({5, 17})}, dotGeneralOp({{-2, -1}}, {}), dotRef({{0, 1}}, {}), sh({3, 5}), F},
      {"dot_batch_by_tag", {sh({4, 3, 17}, bmk), sh({4, 17, 5}, bkn)}, dotOp({"k"}), dotRef({{2, 1}}, {{0, 0}}), sh({4, 3, 5}, bmn), F},
      {"dot_tags_anywhere", {sh({17, 3}, {"k", "m"}), sh({5, 17}, {"n", "k"})}, dotOp({"k"}), dotRef({{0, 1}}, {}), sh({3, 5}, {"m", "n"}), F},
      {"dot_two_tags", {sh({2, 3, 5}, {"a", "k", "j"}), sh({5, 3}, {"j", "k"})}, dotOp({"k", "j"}), dotRef({{1, 1}, {2, 0}}, {}), sh({2}, {"a"}), F},
      // A shared tag that is not contracted becomes a leading batch axis, wherever it was.
      {"dot_batch_not_leading", {sh({3, 4, 17}, {"m", "b", "k"}), sh({17, 4}, {"k", "b"})}, dotOp({"k"}), dotRef({{2, 0}}, {{1, 1}}), sh({4, 3}, {"b", "m"}), F},
  };
}

std::vector<ErrorCase> errorCases() {
  [[maybe_unused]] const DType f16 = DType::f16, i32 = DType::i32, b = DType::bool_;
  return {
      {"dotGeneral_size", {sh({3, 17}), sh({16})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{-1, 0}}, {}); }, "[dotGeneral]", "{3,17}:f32 and {16}:f32"},
      {"dotGeneral_axis", {sh({3, 17}), sh({17})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{2, 0}}, {}); }, "[dotGeneral]", "axis 2 out of range for {3,17}:f32"},
      {"dotGeneral_tag", {sh({3, 17}, {"m", "k"}), sh({17})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{"x", 0}}, {}); }, "[dotGeneral]", "no axis tagged \"x\" in {m=3,k=17}:f32"},
      {"dotGeneral_dtype", {sh({3, 17}), sh({17}, f16)}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{-1, 0}}, {}); }, "[dotGeneral]", "{3,17}:f32 and {17}:f16"},
      {"dotGeneral_reused_axis", {sh({17, 17}), sh({17})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{0, 0}, {1, 0}}, {}); }, "[dotGeneral]", "{17,17}:f32 and {17}:f32"},
      {"dotGeneral_batch_size", {sh({4, 3}), sh({5, 3})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{1, 1}}, {{0, 0}}); }, "[dotGeneral]", "{4,3}:f32 and {5,3}:f32"},
      {"dot_lhs_tag", {sh({3, 17}, {"m", "k"}), sh({17, 5}, {"k", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"x"}); }, "[dot]", "no axis tagged \"x\" in lhs {m=3,k=17}:f32"},
      {"dot_rhs_tag", {sh({3, 17}, {"m", "k"}), sh({17, 5}, {"j", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"k"}); }, "[dot]", "no axis tagged \"k\" in rhs {j=17,n=5}:f32"},
      {"dot_size", {sh({3, 17}, {"m", "k"}), sh({16, 5}, {"k", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"k"}); }, "[dot]", "{m=3,k=17}:f32 and {k=16,n=5}:f32"},
  };
}

}  // namespace

RADIX_OPS_CASES("contraction", contractionCases);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest
