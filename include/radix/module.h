#pragma once
/// radix::compile, radix::Exe and radix::call: from a C++ forward function to a compiled,
/// cached executable; call dedup by hashed argument shapes, as in ZML's module.zig.
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "radix/detail/trace.h"
#include "radix/detail/visit.h"
#include "radix/platform.h"
#include "radix/tensor.h"

namespace radix {

/// A compiled function returning R (a Tensor, or any structure of Tensors and values).
/// auto [a, b] = exe(model, x);  // for R = std::pair<Tensor, Tensor>
template <class R>
class Exe {
 public:
  /// `member`: compiled from a member function, whose object is named "self" in errors;
  /// `constants`: the compile-time constants of the arguments, to name one that changes.
  Exe(std::shared_ptr<detail::Executable> executable, R resultTemplate, bool member = false,
      std::vector<detail::ConstantLeaf> constants = {})
      : executable_(std::move(executable)),
        template_(std::move(resultTemplate)),
        member_(member),
        constants_(std::move(constants)) {}

  /// Runs on the buffers of `args` (same structure as at compile time); returns bound results.
  /// Donated arguments give their buffers to the results and may not be used afterwards.
  /// Errors name the offending leaf: "[exe] self.layers[1].w is {3}:f32, compiled for {2}:f32".
  template <class... Args>
  R operator()(const Args&... args) const {
    detail::ConstantHasher constants;
    detail::TensorCollector leaves;
    ((detail::visitLeaves(constants, args), detail::visitLeaves(leaves, args)), ...);
    const detail::Signature& signature = executable_->signature();
    const std::type_info& types = typeid(std::tuple<std::decay_t<Args>...>);
    if (*signature.argTypes == types && signature.constantsHash != constants.digest() && !constants_.empty()) {
      const std::string change = detail::describeConstantChange(constants_, detail::constantLeaves(member_, args...));
      if (!change.empty()) throw Error(change);
    }
    detail::checkCallStructure(signature, types, constants.digest());
    auto leafPath = [&](size_t i) { return detail::tensorPaths(member_, args...).at(i); };
    std::vector<Tensor> outputs = executable_->run(leaves.out, leafPath);
    R result = template_;
    detail::TensorReplacer replacer{outputs};
    detail::visitLeaves(replacer, result);
    return result;
  }

  /// The module text: `module @radix { func.func @main(...) ... }`, canonicalized.
  const std::string& mlir() const { return executable_->mlir(); }
  /// Shapes of @main's arguments and results, donations and memory kinds.
  const detail::Signature& signature() const { return executable_->signature(); }
  /// True when the executable was loaded from the on-disk cache instead of compiled.
  bool fromCache() const { return executable_->fromCache(); }

 private:
  std::shared_ptr<detail::Executable> executable_;
  R template_;
  bool member_ = false;
  std::vector<detail::ConstantLeaf> constants_;
};

namespace detail {

template <class F, class... Args>
using ResultOf = std::decay_t<std::invoke_result_t<const F&, const Args&...>>;

/// True when compile(platform, &T::method, obj, args...) names obj "self" in errors.
template <class F, class... Args>
inline constexpr bool kMemberCompile = std::is_member_function_pointer_v<std::decay_t<F>> && sizeof...(Args) > 0;

struct ArgumentMapper : PathBuilder {
  CompileSession& session;
  explicit ArgumentMapper(CompileSession& s) : session(s) {}
  void tensor(Tensor& t) { t = session.argument(t, path); }
  template <class T> void value(const T&) {}
  void size(size_t) {}
};

struct ResultCollector {
  CompileSession& session;
  void tensor(const Tensor& t) { session.result(t); }
  template <class T> void value(const T&) {}
  void size(size_t) {}
};

template <class F, class... Args>
std::string compileName() {
  if constexpr (kMemberCompile<F, Args...>) {
    using Obj = std::decay_t<std::tuple_element_t<0, std::tuple<Args...>>>;
    return shortTypeName(typeid(Obj));
  } else {
    return "main";
  }
}

}  // namespace detail

/// Traces `fn(args...)` into `func.func @main`, optimizes and compiles it for `platform` (or
/// loads it from the on-disk cache). Tensor leaves of `args` become @main's arguments; other
/// leaves are compile-time constants. `fn` is a member function pointer (object first in args),
/// a function pointer or a lambda. Errors name the leaf ("[compile] weight self.layers[1].b is an
/// unbound Tensor() ...") or, while tracing, the file and line of the last op called.
/// radix::Exe exe = radix::compile(cpu, &NN::forward, nn, x);
template <class F, class... Args>
Exe<detail::ResultOf<F, Args...>> compile(const Platform& platform, const F& fn, const Args&... args) {
  using R = detail::ResultOf<F, Args...>;
  detail::CompileSession session(platform, detail::compileName<F, Args...>());
  std::tuple<std::decay_t<Args>...> traced(args...);
  constexpr bool member = detail::kMemberCompile<F, Args...>;
  detail::ArgumentMapper mapper(session);
  size_t index = 0;
  auto map = [&](auto& a) {
    mapper.path = detail::argumentName(index++, member);
    detail::visitLeaves(mapper, a);
  };
  std::apply([&](auto&... a) { (map(a), ...); }, traced);
  detail::ConstantHasher constants;
  (detail::visitLeaves(constants, args), ...);
  R result = [&] {
    auto guard = session.activate();
    try {
      return std::apply([&](const auto&... a) { return std::invoke(fn, a...); }, traced);
    } catch (const Error& e) {
      throw detail::atOpLocation(e);
    }
  }();
  detail::ResultCollector collector{session};
  detail::visitLeaves(collector, std::as_const(result));
  auto executable = session.finish(typeid(std::tuple<std::decay_t<Args>...>), constants.digest());
  detail::TensorForgetter forget;
  detail::visitLeaves(forget, result);
  return Exe<R>(std::move(executable), std::move(result), member, detail::constantLeaves(member, args...));
}

namespace detail {

template <class F, class... Args>
ResultOf<F, Args...> callImpl(const std::string& name, const F& fn, const Args&... args) {
  using R = ResultOf<F, Args...>;
  TraceContext& context = currentTrace("call");
  Hasher hasher;
  const std::string identity = identityOf(fn);
  hasher.bytes(identity.data(), identity.size());
  (visitLeaves(hasher, args), ...);
  const uint64_t key = hasher.digest();

  TensorCollector leaves;
  (visitLeaves(leaves, args), ...);
  FunctionEntry* entry = findFunction(context, key);
  if (entry == nullptr) {
    std::vector<Tensor> inner = beginFunction(context, name, key, leaves.out);
    try {
      std::tuple<std::decay_t<Args>...> traced(args...);
      TensorReplacer replacer{inner};
      std::apply([&](auto&... a) { (visitLeaves(replacer, a), ...); }, traced);
      R result = std::apply([&](const auto&... a) { return std::invoke(fn, a...); }, traced);
      TensorCollector results;
      visitLeaves(results, std::as_const(result));
      auto resultTemplate = std::make_shared<R>(result);
      entry = &endFunction(context, results.out, resultTemplate);
      TensorForgetter forget;
      visitLeaves(forget, *resultTemplate);
    } catch (...) {
      abortFunction(context);
      throw;
    }
  }
  std::vector<Tensor> outputs = emitCall(context, *entry, leaves.out);
  R result = *std::static_pointer_cast<R>(entry->resultTemplate);
  TensorReplacer replacer{outputs};
  visitLeaves(replacer, result);
  return result;
}

}  // namespace detail

/// Emits `obj.*method(args...)` once as a private function `<Type>_<hash>` and a `func.call`
/// at every call site; calls with equal argument shapes and values share the function, and
/// non-Tensor results come back from the cache.
/// auto y = radix::call(layer, &Layer::forward, x);
template <class T, class M, class... Args>
  requires std::is_member_function_pointer_v<M>
auto call(const T& obj, M method, const Args&... args) {
  return detail::callImpl(detail::shortTypeName(typeid(T)), method, obj, args...);
}

/// Same for a free function or lambda: radix::call(&block, x)
template <class F, class... Args>
  requires(!std::is_member_function_pointer_v<std::decay_t<F>> && std::is_invocable_v<const std::decay_t<F>&, const Args&...>)
auto call(const F& fn, const Args&... args) {
  const std::decay_t<F> callee = fn;
  return detail::callImpl(std::string("fn"), callee, args...);
}

}  // namespace radix
