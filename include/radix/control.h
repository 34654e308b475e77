#pragma once
/// Control flow traced into regions: radix::whileLoop (scf.while) and radix::ifElse (scf.if).
/// The callables run once, at trace time; the loop runs at run time. They may use any traced
/// value of the enclosing function (captured by the lambda), call radix::call, and nest.
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "radix/detail/visit.h"
#include "radix/tensor.h"

namespace radix {

namespace detail {

/// One scf.while or scf.if being traced: its blocks are traced one after the other, detached,
/// and the op is emitted by finishWhile/finishIf. Destroying it early drops what was traced.
class RegionTrace {
 public:
  enum class Kind { whileLoop, ifElse };
  RegionTrace(Kind kind, std::source_location loc);
  ~RegionTrace();
  RegionTrace(const RegionTrace&) = delete;
  RegionTrace& operator=(const RegionTrace&) = delete;

  /// whileLoop: the initial state (checked here). ifElse: the predicate, a bool scalar.
  void begin(const std::vector<const Tensor*>& init);
  void begin(const Tensor& pred);
  /// Opens the next block: a while's blocks take the state as arguments, returned traced.
  std::vector<Tensor> open();
  /// Closes a while's condition block: `pred` must be a bool scalar.
  void closeCondition(const Tensor& pred);
  /// Closes a while's body or an if's branch with these results.
  void closeYield(const std::vector<const Tensor*>& results);
  /// Emits the op where begin() was called and returns its results.
  std::vector<Tensor> finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The non-Tensor leaves and the structure of a value, as text, in visiting order.
struct LeafText {
  std::vector<std::string> out;
  void tensor(const Tensor&) { out.push_back("a Tensor"); }
  void size(size_t n) { out.push_back("size " + std::to_string(n)); }
  template <class T>
  void value(const T& x) {
    if constexpr (std::is_same_v<T, bool>) out.push_back(x ? "true" : "false");
    else if constexpr (std::is_arithmetic_v<T>) out.push_back(std::to_string(x));
    else if constexpr (std::is_enum_v<T>) out.push_back("enum " + std::to_string(static_cast<int64_t>(x)));
    else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) out.push_back("\"" + std::string(x) + "\"");
    else if constexpr (std::is_same_v<T, Shape>) out.push_back(x.str());
    else if constexpr (std::is_same_v<T, Tag>) out.push_back("tag \"" + std::string(x.name()) + "\"");
    else out.push_back("{}");
  }
};

/// Throws "[op] <what> differs from <reference> at leaf i: ..." when the leaves differ.
void checkSameLeaves(const char* op, const char* what, const char* reference, const std::vector<std::string>& a,
                     const std::vector<std::string>& b);

template <class S>
std::vector<std::string> leafText(const S& s) {
  LeafText t;
  visitLeaves(t, s);
  return std::move(t.out);
}

template <class S>
S withTensors(S s, const std::vector<Tensor>& tensors) {
  TensorReplacer replacer{tensors};
  visitLeaves(replacer, s);
  return s;
}

template <class S>
std::vector<const Tensor*> tensorsOf(const S& s) {
  TensorCollector leaves;
  visitLeaves(leaves, s);
  return std::move(leaves.out);
}

}  // namespace detail

/// Runs `body` while `cond` holds, as one scf.while. S is a Tensor or any structure of Tensors
/// (and constants); cond(const S&) returns a bool scalar Tensor, body(const S&) returns the next S,
/// whose Tensors have the shapes (tags included) of init's and whose other leaves equal init's.
/// radix::whileLoop(x, [&](const Tensor& v) { return limit.sub(v).relu().convert(DType::bool_); },
///                  [](const Tensor& v) { return v.mulConstant(2); })  // {}:f32 -> {}:f32
template <class S, class C, class B>
S whileLoop(const S& init, const C& cond, const B& body, Loc loc = Loc::current()) {
  static_assert(std::is_same_v<std::decay_t<std::invoke_result_t<const C&, const S&>>, Tensor>,
                "radix::whileLoop: cond(const S&) must return a Tensor (a bool scalar)");
  static_assert(std::is_convertible_v<std::invoke_result_t<const B&, const S&>, S>,
                "radix::whileLoop: body(const S&) must return the state type S");
  detail::RegionTrace trace(detail::RegionTrace::Kind::whileLoop, loc);
  trace.begin(detail::tensorsOf(init));
  const S before = detail::withTensors(init, trace.open());
  trace.closeCondition(std::invoke(cond, before));
  const S state = detail::withTensors(init, trace.open());
  const S next = std::invoke(body, state);
  detail::checkSameLeaves("whileLoop", "body's result", "the initial state", detail::leafText(next),
                          detail::leafText(init));
  trace.closeYield(detail::tensorsOf(next));
  return detail::withTensors(init, trace.finish());
}

/// onTrue() if `pred` (a bool scalar) holds, else onFalse(), as one scf.if. Both branches return
/// the same type S with equal structure, constants and Tensor shapes (tags included).
/// radix::ifElse(odd, [&] { return x.mulConstant(3).addConstant(1); }, [&] { return x.div(two); })
template <class T, class F>
auto ifElse(const Tensor& pred, const T& onTrue, const F& onFalse,
            Loc loc = Loc::current()) {
  using S = std::decay_t<std::invoke_result_t<const T&>>;
  static_assert(std::is_same_v<S, std::decay_t<std::invoke_result_t<const F&>>>,
                "radix::ifElse: both branches must return the same type");
  detail::RegionTrace trace(detail::RegionTrace::Kind::ifElse, loc);
  trace.begin(pred);
  trace.open();
  const S a = std::invoke(onTrue);
  trace.closeYield(detail::tensorsOf(a));
  trace.open();
  const S b = std::invoke(onFalse);
  detail::checkSameLeaves("ifElse", "onFalse's result", "onTrue's", detail::leafText(b), detail::leafText(a));
  trace.closeYield(detail::tensorsOf(b));
  return detail::withTensors(a, trace.finish());
}

}  // namespace radix
