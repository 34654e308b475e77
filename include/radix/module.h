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
  /// The cache entry folder holding the compiled code, which radix::Program::load (the runtime
  /// library, without the compiler) loads: "/root/.cache/radix/cpu/Mlp_81c2..."; "" with the
  /// cache off.
  const std::string& cacheEntry() const { return executable_->cacheEntry(); }

 private:
  std::shared_ptr<detail::Executable> executable_;
  R template_;
  bool member_ = false;
  std::vector<detail::ConstantLeaf> constants_;
};

namespace detail {

/// True when `fn(args..., loc)` is how to call fn: nn layers take a trailing `Loc`.
template <class F, class... Args>
inline constexpr bool kTakesLoc =
    !std::is_invocable_v<const F&, const Args&...> && std::is_invocable_v<const F&, const Args&..., Loc>;

/// The result type of a call that does not compile: a placeholder, so that only the
/// static_assert of checkCallable speaks.
struct NotCallable {
  template <class T>
  operator T() const {  // NOLINT: converts to whatever the caller expects, to stay quiet
    return T{};
  }
};

template <class F, class... Args>
auto resultType() {
  if constexpr (std::is_invocable_v<const F&, const Args&...>)
    return std::type_identity<std::invoke_result_t<const F&, const Args&...>>{};
  else if constexpr (kTakesLoc<F, Args...>)
    return std::type_identity<std::invoke_result_t<const F&, const Args&..., Loc>>{};
  else
    return std::type_identity<NotCallable>{};
}

template <class F, class... Args>
using ResultOf = std::decay_t<typename decltype(resultType<F, Args...>())::type>;

template <class F, class... Args>
inline constexpr bool kCallable = std::is_invocable_v<const F&, const Args&...> || kTakesLoc<F, Args...>;

/// Compile-time messages for a function radix::compile or radix::call can't trace; true when
/// it can. A non-const member function (or a mutable lambda) is named as such.
template <class F, class... Args>
constexpr bool checkCallable() {
  if constexpr (kCallable<F, Args...>) {
    return true;
  } else {
    if constexpr (std::is_member_function_pointer_v<F> && sizeof...(Args) > 0) {
      using Tuple = std::tuple<Args...>;
      using Obj = std::tuple_element_t<0, Tuple>;
      constexpr bool mutableMember = []<size_t... I>(std::index_sequence<I...>) {
        return std::is_invocable_v<const F&, Obj&, const std::tuple_element_t<I + 1, Tuple>&...> ||
               std::is_invocable_v<const F&, Obj&, const std::tuple_element_t<I + 1, Tuple>&..., Loc>;
      }(std::make_index_sequence<sizeof...(Args) - 1>{});
      static_assert(!mutableMember,
                    "radix: the member function is not const: Radix traces it on a const copy of the object, so "
                    "declare it const, e.g. `Tensor forward(Tensor x) const`");
      static_assert(mutableMember, "radix: the member function can't be called on this object with these arguments "
                                   "(check their number and types; the object comes first)");
    } else {
      constexpr bool mutableCall = std::is_invocable_v<F&, const Args&...>;
      static_assert(!mutableCall, "radix: the function object's operator() is not const (a mutable lambda?): Radix "
                                  "calls it as const, so drop `mutable`");
      static_assert(mutableCall, "radix: the function can't be called with these arguments (check their number and "
                                 "types; a member function takes the object first)");
    }
    return false;
  }
}

/// fn(args...), or fn(args..., Loc::none()) for a function with a trailing Loc (nn layers):
/// the layer then reports the location noted for the caller.
template <class F, class... Args>
decltype(auto) invokeTraced(const F& fn, const Args&... args) {
  if constexpr (kTakesLoc<F, Args...>)
    return std::invoke(fn, args..., Loc::none());
  else
    return std::invoke(fn, args...);
}

/// The Tensor leaves of a structure with their paths (the path of the root given first).
struct LeafPaths : PathBuilder {
  std::vector<std::pair<const Tensor*, std::string>> out;
  void tensor(const Tensor& t) { out.emplace_back(&t, path); }
  template <class T> void value(const T&) {}
  void size(size_t) {}
};

/// The path of `obj` among the structures being traced ("self.layers[3].attn"), or "".
template <class T>
std::string pathOf(const T& obj) {
  LeafPaths leaves;
  visitLeaves(leaves, obj);
  if (leaves.out.empty()) return {};
  return pathOfLeaf(leaves.out.front().first, leaves.out.front().second);
}

/// Pushes a path frame for the traced arguments of one function; pops it when destroyed.
class PathFrame {
 public:
  explicit PathFrame(std::vector<std::pair<const Tensor*, std::string>> leaves) { pushPathFrame(std::move(leaves)); }
  ~PathFrame() { popPathFrame(); }
  PathFrame(const PathFrame&) = delete;
  PathFrame& operator=(const PathFrame&) = delete;
};

/// radix::compile's platform with the location of the call: the implicit conversion from a
/// Platform captures the caller's line.
struct PlatformAt {
  const Platform& platform;
  Loc loc;
  PlatformAt(const Platform& p, Loc where = Loc::current()) : platform(p), loc(where) {}  // NOLINT: implicit
};

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

template <class F, class... Args>
Exe<ResultOf<F, Args...>> compileImpl(const PlatformAt& at, const F& fn, const Args&... args) {
  using R = ResultOf<F, Args...>;
  const Platform& platform = at.platform;
  CompileSession session(platform, compileName<F, Args...>(), at.loc);
  std::tuple<std::decay_t<Args>...> traced(args...);
  constexpr bool member = kMemberCompile<F, Args...>;
  ArgumentMapper mapper(session);
  LeafPaths paths;
  size_t index = 0;
  auto map = [&](auto& a) {
    mapper.path = paths.path = argumentName(index++, member);
    visitLeaves(mapper, a);
    visitLeaves(paths, std::as_const(a));
  };
  std::apply([&](auto&... a) { (map(a), ...); }, traced);
  ConstantHasher constants;
  (visitLeaves(constants, args), ...);
  R result = [&] {
    auto guard = session.activate();
    PathFrame frame(std::move(paths.out));
    try {
      return std::apply([&](const auto&... a) { return invokeTraced(fn, a...); }, traced);
    } catch (const Error& e) {
      throw atOpLocation(e);
    }
  }();
  ResultCollector collector{session};
  visitLeaves(collector, std::as_const(result));
  auto executable = session.finish(typeid(std::tuple<std::decay_t<Args>...>), constants.digest());
  TensorForgetter forget;
  visitLeaves(forget, result);
  return Exe<R>(std::move(executable), std::move(result), member, constantLeaves(member, args...));
}

}  // namespace detail

/// Traces `fn(args...)` into `func.func @main`, optimizes and compiles it for `platform` (or
/// loads it from the on-disk cache). Tensor leaves of `args` become @main's arguments; other
/// leaves are compile-time constants. `fn` is a member function pointer (object first in args),
/// a function pointer or a lambda. Errors name the leaf ("[compile] weight self.layers[1].b is an
/// unbound Tensor() ...") or, while tracing, end with the user's file and line (of this call,
/// of the last op or nn layer called) and the field path of the failing layer. `fn` must be
/// const (a const member function, a lambda without `mutable`): a compile-time message says so.
/// radix::Exe exe = radix::compile(cpu, &NN::forward, nn, x);
template <class F, class... Args>
Exe<detail::ResultOf<F, Args...>> compile(detail::PlatformAt at, const F& fn, const Args&... args) {
  if constexpr (!detail::checkCallable<F, Args...>())
    return Exe<detail::ResultOf<F, Args...>>(nullptr, {});
  else
    return detail::compileImpl(at, fn, args...);
}

namespace detail {

template <class F, class... Args>
ResultOf<F, Args...> callTraced(const std::string& name, const F& fn, const Args&... args) {
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
    constexpr bool member = std::is_member_function_pointer_v<F> && sizeof...(Args) > 0;
    std::string objectPath;
    if constexpr (member) objectPath = pathOf(std::get<0>(std::forward_as_tuple(args...)));
    std::vector<Tensor> inner = beginFunction(context, name, key, leaves.out);
    try {
      std::tuple<std::decay_t<Args>...> traced(args...);
      TensorReplacer replacer{inner};
      std::apply([&](auto&... a) { (visitLeaves(replacer, a), ...); }, traced);
      LeafPaths paths;
      if constexpr (member) {
        paths.path = objectPath;
        visitLeaves(paths, std::as_const(std::get<0>(traced)));
      }
      PathFrame frame(std::move(paths.out));
      R result = [&] {
        try {
          return std::apply([&](const auto&... a) { return invokeTraced(fn, a...); }, traced);
        } catch (const Error&) {
          if (!objectPath.empty()) noteErrorPath(objectPath);
          throw;
        }
      }();
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

template <class F, class... Args>
ResultOf<F, Args...> callImpl(const std::string& name, const F& fn, const Args&... args) {
  if constexpr (!checkCallable<F, Args...>())
    return {};
  else
    return callTraced(name, fn, args...);
}

}  // namespace detail

/// Emits `obj.*method(args...)` once as a private function `<Type>_<method>_<hash>` and a
/// `func.call` at every call site; calls with equal argument shapes and values share the
/// function, and non-Tensor results come back from the cache. The hash is one of the function's
/// traced body, so that a relinked program traces the same module (and its compiled code comes
/// from the cache); `<method>` is there when the symbol is exported (e.g. -rdynamic).
/// auto y = radix::call(layer, &Layer::forward, x);  // func.func private @Layer_forward_<hash>
template <class T, class M, class... Args>
  requires(std::is_member_function_pointer_v<M> && !std::is_convertible_v<const T&, const char*>)
auto call(const T& obj, M method, const Args&... args) {
  std::string name = detail::shortTypeName(typeid(T));
  if (const std::string member = detail::nameOf(method); !member.empty()) name += "_" + member;
  return detail::callImpl(name, method, obj, args...);
}

/// Same for a free function or lambda: radix::call(&block, x) emits @block_<hash> (@fn_<hash>
/// for lambdas and unexported functions).
template <class F, class... Args>
  requires(!std::is_member_function_pointer_v<std::decay_t<F>> &&
           (std::is_invocable_v<const std::decay_t<F>&, const Args&...> || std::is_invocable_v<std::decay_t<F>&, const Args&...>))
auto call(const F& fn, const Args&... args) {
  const std::decay_t<F> callee = fn;
  const std::string name = detail::nameOf(callee);
  return detail::callImpl(name.empty() ? std::string("fn") : name, callee, args...);
}

/// Same, with the function's name in the module given: radix::call("block", &block, x) emits
/// @block_<hash>. The name must be an identifier ([A-Za-z_][A-Za-z0-9_]*).
template <class F, class... Args>
  requires(std::is_invocable_v<const std::decay_t<F>&, const Args&...>)
auto call(const char* name, const F& fn, const Args&... args) {
  const std::decay_t<F> callee = fn;
  return detail::callImpl(detail::checkedFunctionName(name), callee, args...);
}

}  // namespace radix
