// Reductions against a naive reference.
#include "ops_testing.h"

namespace opstest {
namespace {

std::vector<Case> reduceCases() {
  const auto F = kFloats;
  return {
      {"sum_last", {sh({3, 17})}, sumOp(1), reduceRef(1, false), sh({3, 1}), F},
      {"sum_first", {sh({3, 17})}, sumOp(0), reduceRef(0, false), sh({1, 17}), F},
      {"sum_129", {sh({129})}, sumOp(0), reduceRef(0, false), sh({1}), F},
      {"sum_negative_axis", {sh({17, 1, 3})}, sumOp(-1), reduceRef(2, false), sh({17, 1, 1}), F},
      {"sum_tag", {sh({3, 17, 5}, {"b", "s", "d"})}, sumOp("s"), reduceRef(1, false), sh({3, 1, 5}, {"b", "s", "d"}), F},
      // All negative: a max that starts from 0 would return 0.
      {"max_last", {sh({3, 17})}, maxOp(1), reduceRef(1, true), sh({3, 1}), F, -5, -1},
      {"max_first", {sh({3, 17})}, maxOp(0), reduceRef(0, true), sh({1, 17}), F, -5, -1},
      {"max_129", {sh({129})}, maxOp(-1), reduceRef(0, true), sh({1}), F},
      {"max_tag", {sh({3, 17, 5}, {"b", "s", "d"})}, maxOp("s"), reduceRef(1, true), sh({3, 1, 5}, {"b", "s", "d"}), F},
  };
}

std::vector<ErrorCase> errorCases() {
  [[maybe_unused]] const DType f16 = DType::f16, i32 = DType::i32, b = DType::bool_;
  return {
      {"sum_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].sum(2); }, "[sum]", "axis 2 out of range for {3,17}:f32"},
      {"sum_tag", {sh({3, 17}, {"b", "d"})}, [](const Ts& x) { return x[0].sum("s"); }, "[sum]", "no axis tagged \"s\" in {b=3,d=17}:f32"},
      {"max_axis", {sh({3, 17})}, [](const Ts& x) { return x[0].max(-3); }, "[max]", "axis -3 out of range for {3,17}:f32"},
      {"max_bool", {sh({3}, b)}, [](const Ts& x) { return x[0].max(0); }, "[max]", "{3}:bool"},
  };
}

}  // namespace

RADIX_OPS_CASES("reduce", reduceCases);
RADIX_OPS_ERRORS(errorCases);

}  // namespace opstest
