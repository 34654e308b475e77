// Contractions (dotGeneral, dot) against a naive reference.
#include "ops_testing.h"

namespace opstest {
namespace {

std::vector<Case> contractionCases() {
  const auto F = kFloats;
  const DType u8 = DType::u8, i8 = DType::i8, i32 = DType::i32, f32 = DType::f32, bf16 = DType::bf16;
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
      // Accumulating in i32 (8-bit operands, signs mixed) and in f32 (16-bit floats, no rounding back).
      {"dotGeneral_i32_u8_i8", {sh({37, 129}, u8), sh({129, 45}, i8)}, dotGeneralAsOp({{1, 0}}, {}, i32), dotRef({{1, 0}}, {}), sh({37, 45}, i32), {}, 0, 128},
      {"dotGeneral_i32_i8_batched", {sh({3, 17, 70}, i8), sh({3, 70, 33}, i8)}, dotGeneralAsOp({{2, 1}}, {{0, 0}}, i32), dotRef({{2, 1}}, {{0, 0}}), sh({3, 17, 33}, i32), {}, -128, 128},
      {"dotGeneral_i32_u8_rhs_transposed", {sh({5, 300}, u8), sh({40, 300}, u8)}, dotGeneralAsOp({{1, 1}}, {}, i32), dotRef({{1, 1}}, {}), sh({5, 40}, i32), {}, 0, 128},
      {"dotGeneral_i32_i8_matvec", {sh({33, 65}, i8), sh({65}, u8)}, dotGeneralAsOp({{1, 0}}, {}, i32), dotRef({{1, 0}}, {}), sh({33}, i32), {}, 0, 128},
      {"dotGeneral_f32_bf16", {sh({9, 65}, bf16), sh({65, 7}, bf16)}, dotGeneralAsOp({{1, 0}}, {}, f32), dotRef({{1, 0}}, {}), sh({9, 7}, f32), {}, -2, 2, {}, 1e-5},
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
      {"dotGeneral_i32_of_floats", {sh({3, 17}), sh({17})}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{-1, 0}}, {}, DType::i32); }, "[dotGeneral]", "cannot accumulate {3,17}:f32 and {17}:f32 in i32"},
      {"dotGeneral_i16_of_bytes", {sh({3, 17}, DType::i8), sh({17}, DType::i8)}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{-1, 0}}, {}, DType::i16); }, "[dotGeneral]", "in i16: i32 takes 8-bit integers"},
      {"dotGeneral_f32_of_f64", {sh({3, 17}, DType::f64), sh({17}, DType::f64)}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{-1, 0}}, {}, DType::f32); }, "[dotGeneral]", "cannot accumulate {3,17}:f64 and {17}:f64 in f32"},
      {"dotGeneral_mixed_bytes", {sh({3, 17}, DType::u8), sh({17}, DType::i8)}, [](const Ts& x) { return x[0].dotGeneral(x[1], {{-1, 0}}, {}); }, "[dotGeneral]", "(accumulate in i32 to mix i8 and u8)"},
      {"dot_lhs_tag", {sh({3, 17}, {"m", "k"}), sh({17, 5}, {"k", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"x"}); }, "[dot]", "no axis tagged \"x\" in lhs {m=3,k=17}:f32"},
      {"dot_rhs_tag", {sh({3, 17}, {"m", "k"}), sh({17, 5}, {"j", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"k"}); }, "[dot]", "no axis tagged \"k\" in rhs {j=17,n=5}:f32"},
      {"dot_size", {sh({3, 17}, {"m", "k"}), sh({16, 5}, {"k", "n"})}, [](const Ts& x) { return x[0].dot(x[1], {"k"}); }, "[dot]", "{m=3,k=17}:f32 and {k=16,n=5}:f32"},
  };
}

}  // namespace

RADIX_OPS_CASES("contraction", contractionCases);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest
