#pragma once
// Walks the leaves of argument structures: Tensors, scalars, strings, enums, std containers and
// plain aggregates (through Boost.PFR). Used by compile, call, Exe and hashing.
#include <array>
#include <boost/pfr.hpp>
#include <cstring>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "radix/tensor.h"

namespace radix::detail {

template <class T> struct IsStdArray : std::false_type {};
template <class T, size_t N> struct IsStdArray<std::array<T, N>> : std::true_type {};
template <class T> struct IsVector : std::false_type {};
template <class T, class A> struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T> struct IsOptional : std::false_type {};
template <class T> struct IsOptional<std::optional<T>> : std::true_type {};
template <class T> struct IsVariant : std::false_type {};
template <class... T> struct IsVariant<std::variant<T...>> : std::true_type {};
template <class T> struct IsTupleLike : std::false_type {};
template <class... T> struct IsTupleLike<std::tuple<T...>> : std::true_type {};
template <class A, class B> struct IsTupleLike<std::pair<A, B>> : std::true_type {};
template <class> inline constexpr bool kAlwaysFalse = false;

// ---- field names, for error messages that name a leaf's path (layers[1].attn.wq) ----

/// Storage for a T that is never constructed: only addresses of its fields are taken, in
/// constant expressions (so T needs no default constructor and may be a local type).
template <class T>
union FakeObject {
  char unused;
  T value;
  constexpr FakeObject() : unused() {}
  constexpr ~FakeObject() {}
};
template <class T>
inline FakeObject<T> kFakeObject;

/// The compiler's name for this function, which spells the address `Ptr` (a field of the fake
/// object) with the field's name: "... [Ptr = &kFakeObject.value.layers]" (the trick of
/// Boost.PFR 1.84's get_name; Debian's PFR 1.81 has no field names).
template <auto Ptr>
consteval std::string_view spelledAddress() {
  return std::source_location::current().function_name();
}

/// The trailing identifier of a spelled field address, or "" when there is none.
std::string_view identifierAtEnd(std::string_view spelled);

/// Name of field I of the aggregate T, or "" when the compiler does not spell it.
template <class T, size_t I>
std::string_view fieldName() {
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 11)
  constexpr auto fields = boost::pfr::detail::tie_as_tuple(kFakeObject<T>.value);
  return identifierAtEnd(spelledAddress<&boost::pfr::detail::sequence_tuple::get<I>(fields)>());
#else
  return {};
#endif
}

/// One step from a structure to one of its parts: a named field (`.w`), a field without a name
/// (`.field#2`) or an element (`[3]`).
struct PathStep {
  std::string_view name;  // field name; empty for elements and unnamed fields
  size_t index = 0;       // element or field index
  bool isField = false;
};

/// Visitors that define enter(PathStep)/leave() are told the path to every leaf.
template <class V>
concept TracksPaths = requires(V& v, const PathStep& step) {
  v.enter(step);
  v.leave();
};

template <class V, class T>
void visitLeaves(V& v, T& x);

template <class V, class T>
void visitPart(V& v, T& x, const PathStep& step) {
  if constexpr (TracksPaths<V>) v.enter(step);
  visitLeaves(v, x);
  if constexpr (TracksPaths<V>) v.leave();
}

/// Calls v.tensor(t) for every Tensor leaf, v.value(x) for every other leaf, and v.size(n) for
/// the run-time structure (vector sizes, optional presence, variant index), in a fixed order.
/// Optionals and variants are transparent in paths; elements of arrays, vectors, pairs and
/// tuples are `[i]`, fields of structs `.name`.
template <class V, class T>
void visitLeaves(V& v, T& x) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    v.tensor(x);
  } else if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U> || std::is_same_v<U, std::string> ||
                       std::is_same_v<U, std::string_view> || std::is_same_v<U, Shape> ||
                       std::is_same_v<U, Tag> || std::is_same_v<U, std::monostate>) {
    v.value(x);
  } else if constexpr (std::is_array_v<U> || IsStdArray<U>::value) {
    size_t i = 0;
    for (auto& e : x) visitPart(v, e, PathStep{{}, i++, false});
  } else if constexpr (IsVector<U>::value) {
    v.size(x.size());
    size_t i = 0;
    for (auto& e : x) visitPart(v, e, PathStep{{}, i++, false});
  } else if constexpr (IsOptional<U>::value) {
    v.size(x.has_value() ? 1 : 0);
    if (x) visitLeaves(v, *x);
  } else if constexpr (IsVariant<U>::value) {
    v.size(x.index());
    std::visit([&](auto& a) { visitLeaves(v, a); }, x);
  } else if constexpr (IsTupleLike<U>::value) {
    size_t i = 0;
    std::apply([&](auto&... a) { (visitPart(v, a, PathStep{{}, i++, false}), ...); }, x);
  } else if constexpr (std::is_class_v<U> && !std::is_aggregate_v<U>) {
    static_assert(kAlwaysFalse<U>,
                  "radix: this struct is not an aggregate, so Radix can't visit its fields: a model struct has public "
                  "fields only, no user-declared constructors, no private or protected fields, no virtual functions "
                  "and no virtual or private bases (initialize it with braces: Layer{w, b}). Other classes than "
                  "Tensor, Shape, std::string and the std containers Radix knows can't be leaves");
  } else if constexpr (std::is_aggregate_v<U> && std::is_class_v<U>) {
    boost::pfr::for_each_field(x, [&](auto& field, auto index) {
      constexpr size_t I = decltype(index)::value;
      std::string_view name;
      if constexpr (TracksPaths<V>) name = fieldName<U, I>();
      visitPart(v, field, PathStep{name, I, true});
    });
  } else {
    static_assert(kAlwaysFalse<U>,
                  "radix: argument and result types may hold Tensors, numbers, enums, strings, Shapes, "
                  "std::array/vector/optional/variant/pair/tuple and plain structs of those");
  }
}

/// The name of top-level argument `i` in paths: "self" for the object of a member function
/// compile, else "arg0", "arg1", ... counting the function's own parameters.
std::string argumentName(size_t i, bool member);

/// Builds the path of the current leaf: "self.layers[1].attn.wq".
struct PathBuilder {
  std::string path;
  std::vector<size_t> marks;
  void enter(const PathStep& step);
  void leave() {
    path.resize(marks.back());
    marks.pop_back();
  }
};

/// Paths of the Tensor leaves, in visiting order.
struct TensorPaths : PathBuilder {
  std::vector<std::string> out;
  void tensor(const Tensor&) { out.push_back(path); }
  template <class T> void value(const T&) {}
  void size(size_t) {}
};

/// Paths of every Tensor leaf of `args...`: {"self.layers[0].w", ..., "arg0"}.
template <class... Args>
std::vector<std::string> tensorPaths(bool member, const Args&... args) {
  TensorPaths paths;
  size_t i = 0;
  auto one = [&](const auto& a) {
    paths.path = argumentName(i++, member);
    visitLeaves(paths, a);
  };
  (one(args), ...);
  return std::move(paths.out);
}

/// Deep hash of argument structures, stable across processes (XXH64 of a byte stream). The
/// stream goes through a fixed buffer into the hash state: an Exe hashes its arguments' constants
/// on every call, and a growing string cost a few large mallocs a call.
class Hasher {
 public:
  Hasher();
  void bytes(const void* data, size_t n) {
    if (n == 0) return;  // an empty string's data() may be null, which memcpy may not take
    if (n <= sizeof buf_ - used_) {
      std::memcpy(buf_ + used_, data, n);
      used_ += n;
    } else {
      absorb(data, n);
    }
  }
  void size(size_t n) { bytes(&n, sizeof n); }
  void tensor(const Tensor& t) { shape(t.shape()); }
  void shape(const Shape& s);
  void tag(Tag t) {
    size(t.name().size());
    bytes(t.name().data(), t.name().size());
  }
  template <class T>
  void value(const T& x) {
    if constexpr (std::is_same_v<T, Shape>) {
      shape(x);
    } else if constexpr (std::is_same_v<T, Tag>) {
      tag(x);
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
      size(x.size());
      bytes(x.data(), x.size());
    } else if constexpr (std::is_same_v<T, std::monostate>) {
    } else if constexpr (std::is_same_v<T, bool>) {
      unsigned char b = x ? 1 : 0;
      bytes(&b, 1);
    } else {
      bytes(&x, sizeof x);
    }
  }
  uint64_t digest() const;

 private:
  void absorb(const void* data, size_t n);  // the buffer, then data, into the state
  alignas(8) unsigned char state_[96];      // an XXH64_state_t (host.cpp checks the size)
  unsigned char buf_[256];
  size_t used_ = 0;
};

/// Hashes every leaf of `args...`: equal structures with equal shapes and values hash equal.
template <class... Args>
uint64_t hashArgs(const Args&... args) {
  Hasher h;
  (visitLeaves(h, args), ...);
  return h.digest();
}

/// Hashes only the non-Tensor leaves and the structure (compile-time constants of an Exe).
struct ConstantHasher : Hasher {
  void tensor(const Tensor&) { size(0x7e); }
};

/// One compile-time constant of an argument structure, with its path (for errors naming it).
struct ConstantLeaf {
  std::string path;
  bool isSize = false;  // a container size, an optional's presence or a variant's index
  uint64_t value = 0;   // that number, or a hash of the value
};

/// The non-Tensor leaves and sizes of argument structures, with their paths.
struct ConstantLeaves : PathBuilder {
  std::vector<ConstantLeaf> out;
  void tensor(const Tensor&) {}
  template <class T>
  void value(const T& x) {
    Hasher h;
    h.value(x);
    out.push_back({path, false, h.digest()});
  }
  void size(size_t n) { out.push_back({path, true, n}); }
};

/// Constant leaves of `args...`, named as tensorPaths names Tensor leaves.
template <class... Args>
std::vector<ConstantLeaf> constantLeaves(bool member, const Args&... args) {
  ConstantLeaves leaves;
  size_t i = 0;
  auto one = [&](const auto& a) {
    leaves.path = argumentName(i++, member);
    visitLeaves(leaves, a);
  };
  (one(args), ...);
  return std::move(leaves.out);
}

/// "[exe] non-Tensor arguments ... differ from compile time: self.heads changed ..." naming the
/// first constant that differs, or "" when none does.
std::string describeConstantChange(const std::vector<ConstantLeaf>& compiled, const std::vector<ConstantLeaf>& now);

/// Collects pointers to the Tensor leaves, in visiting order.
struct TensorCollector {
  std::vector<const Tensor*> out;
  void tensor(const Tensor& t) { out.push_back(&t); }
  template <class T> void value(const T&) {}
  void size(size_t) {}
};

/// Replaces Tensor leaves, in visiting order, with the given tensors.
struct TensorReplacer {
  const std::vector<Tensor>& with;
  size_t next = 0;
  void tensor(Tensor& t);
  template <class T> void value(const T&) {}
  void size(size_t) {}
};

/// Turns Tensor leaves into shape-only placeholders (so no traced value escapes a trace).
struct TensorForgetter {
  void tensor(Tensor& t) { t = Tensor(t.shape()); }
  template <class T> void value(const T&) {}
  void size(size_t) {}
};

/// "NN" for a demangled "radix::test::NN<int>" (the last identifier, made symbol-safe).
std::string shortTypeName(const std::type_info& type);
/// Demangled type name, for error messages.
std::string demangle(const std::type_info& type);
/// Bytes that identify a function within one process, for radix::call's function cache: its
/// type and address (function pointers), or its type alone (lambdas, functors). Never part of
/// the traced module (functions are named by their content there).
std::string functionIdentity(const std::type_info& type, const void* pointerBytes, size_t size, bool isMemberPointer);
/// The source name of the function at a function or (non-virtual) member function pointer,
/// from the dynamic symbol table ("forward" for &Layer::forward), made symbol-safe; "" when the
/// symbol is not exported. Stable across relinks, unlike the address.
std::string functionName(const void* pointerBytes, bool isMemberPointer);

/// `name` if it is an identifier, else radix::Error("[call] function name ...").
std::string checkedFunctionName(const char* name);

/// functionName for a callable: "" for lambdas and functors.
template <class F>
std::string nameOf(const F& f) {
  using D = std::decay_t<F>;
  if constexpr (std::is_member_function_pointer_v<D> || std::is_pointer_v<D>) {
    return functionName(&f, std::is_member_function_pointer_v<D>);
  } else {
    return {};
  }
}

template <class F>
std::string identityOf(const F& f) {
  using D = std::decay_t<F>;
  if constexpr (std::is_member_function_pointer_v<D> || std::is_pointer_v<D>) {
    return functionIdentity(typeid(D), &f, sizeof f, std::is_member_function_pointer_v<D>);
  } else {
    return functionIdentity(typeid(D), nullptr, 0, false);
  }
}

}  // namespace radix::detail
