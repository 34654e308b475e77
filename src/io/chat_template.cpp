// A small Jinja interpreter for chat templates (include/radix/chat.h), rendering as transformers'
// ImmutableSandboxedEnvironment does: the evaluator, globals and public API here; values, lexer and
// parser, and builtins in jinja_{values,parse,filters}.cpp over src/io/jinja.h. Templates come from
// model files, so every limit (nesting, steps, output) is an error, never a crash.
#include "radix/chat.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "io/jinja.h"
#include "radix/io.h"

namespace radix {
namespace jinja {

// ---------------------------------------------------------------------------------------------
// Evaluator

namespace {

Value function(std::string name, std::function<Value(Interp&, std::vector<Value>&, Kwargs&)> fn) {
  auto f = std::make_shared<FuncObj>();
  f->name = std::move(name);
  f->call = std::move(fn);
  Value v;
  v.kind = Kind::func;
  v.fn = std::move(f);
  return v;
}

}  // namespace

// ---- statements
Flow Interp::exec(const Body& body, Frame& frame) {
  for (const auto& s : body) {
    const Flow f = exec(*s, frame);
    if (f != Flow::normal) return f;
  }
  return Flow::normal;
}

Flow Interp::exec(const Stmt& s, Frame& frame) {
  step();
  Deeper deeper(*this);
  switch (s.kind) {
    case St::text: emit(s.text); return Flow::normal;
    case St::output: {
      const Value v = eval(*s.expr, frame);
      if (v.kind == Kind::string) emit(v.s);
      else emit(str(v));
      return Flow::normal;
    }
    case St::ifs:
      for (size_t k = 0; k < s.conds.size(); ++k)
        if (!s.conds[k] || truthy(eval(*s.conds[k], frame))) return exec(s.bodies[k], frame);
      return Flow::normal;
    case St::fors: return execFor(s, frame);
    case St::set: {
      Value v = eval(*s.expr, frame);
      if (s.nsTarget) {
        Value ns = eval(*s.nsTarget, frame);
        if (ns.kind != Kind::ns) error(*s.nsTarget, "cannot assign attribute on non-namespace object " + typeName(ns));
        if (holdsObject(v)) error(*s.expr, "a namespace attribute cannot hold a namespace, macro or function");
        ns.dict->set(Value::string(s.text), std::move(v));
      } else {
        assign(s, frame, std::move(v), *s.expr);
      }
      return Flow::normal;
    }
    case St::setBlock: {
      std::string saved = std::move(out);
      out.clear();
      exec(s.bodies[0], frame);
      std::string captured = std::move(out);
      out = std::move(saved);
      frame.set(s.names[0], Value::string(std::move(captured)));
      return Flow::normal;
    }
    case St::macro: frame.set(s.text, makeMacro(s)); return Flow::normal;
    case St::brk: return loopDepth ? Flow::brk : Flow::normal;
    case St::cont: return loopDepth ? Flow::cont : Flow::normal;
    case St::generation: return exec(s.bodies[0], frame);
  }
  return Flow::normal;
}

// Whether v holds a namespace or callable: those could make a reference cycle through a namespace.
bool Interp::holdsObject(const Value& v) {
  step();
  if (v.kind == Kind::ns || v.kind == Kind::func) return true;
  if (v.kind == Kind::list)
    return std::any_of(v.list->items.begin(), v.list->items.end(), [&](const Value& x) { return holdsObject(x); });
  if (v.kind == Kind::dict)
    return std::any_of(v.dict->items.begin(), v.dict->items.end(), [&](const auto& kv) { return holdsObject(kv.second); });
  return false;
}

void Interp::assign(const Stmt& s, Frame& frame, Value v, const Expr& where) {
  if (!s.unpack) {
    frame.set(s.names[0], std::move(v));
    return;
  }
  const std::vector<Value> items = iterate(v, where);
  if (items.size() != s.names.size())
    error(where, "cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(s.names.size()) + " names");
  for (size_t k = 0; k < items.size(); ++k) frame.set(s.names[k], items[k]);
}

Flow Interp::execFor(const Stmt& s, Frame& frame) {
  std::vector<Value> items = iterate(eval(*s.expr, frame), *s.expr);
  if (s.filter) {
    std::vector<Value> kept;
    for (Value& item : items) {
      step();
      Frame scope{{}, &frame};
      assign(s, scope, item, *s.expr);
      if (truthy(eval(*s.filter, scope))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (s.bodies.size() > 1) exec(s.bodies[1], frame);
    return Flow::normal;
  }
  // One loop object per loop, updated in place each iteration (absent previtem/nextitem are undefined).
  const int64_t n = static_cast<int64_t>(items.size());
  Value loop = Value::makeDict();
  auto& d = loop.dict->items;
  for (const char* key : {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0", "previtem", "nextitem", "cycle"})
    d.emplace_back(Value::string(key), Value());
  for (const Value& item : items) loop.dict->depth = std::max(loop.dict->depth, 1 + depthOf(item));
  d[6].second = Value::integer(n);
  d[7].second = Value::integer(1);
  d[8].second = Value::integer(0);
  auto index = std::make_shared<int64_t>(0);
  d[11].second = function("loop.cycle", [index](Interp&, std::vector<Value>& args, Kwargs&) {
    if (args.empty()) fail("loop.cycle needs at least one argument");
    return args[static_cast<size_t>(*index) % args.size()];
  });
  ++loopDepth;
  for (int64_t k = 0; k < n; ++k) {
    step(4);
    *index = k;
    d[0].second = Value::integer(k + 1);
    d[1].second = Value::integer(k);
    d[2].second = Value::integer(n - k);
    d[3].second = Value::integer(n - k - 1);
    d[4].second = Value::boolean(k == 0);
    d[5].second = Value::boolean(k == n - 1);
    d[9].second = k > 0 ? items[k - 1] : Value::undefined("previtem");
    d[10].second = k + 1 < n ? items[k + 1] : Value::undefined("nextitem");
    Frame scope{{}, &frame};
    scope.vars.reserve(2 + s.names.size());
    scope.vars.emplace_back("loop", loop);
    assign(s, scope, items[k], *s.expr);
    if (exec(s.bodies[0], scope) == Flow::brk) break;
  }
  --loopDepth;
  return Flow::normal;
}

Value Interp::makeMacro(const Stmt& s) {
  auto fn = std::make_shared<FuncObj>();
  fn->name = s.text;
  const Stmt* macro = &s;
  fn->call = [macro](Interp& in, std::vector<Value>& args, Kwargs& kwargs) {
    if (in.calls >= kMaxCallDepth) fail("macro calls nested deeper than " + std::to_string(kMaxCallDepth) + " (in " + macro->text + ")");
    if (args.size() > macro->names.size()) fail("macro '" + macro->text + "' takes not more than " + std::to_string(macro->names.size()) + " arguments");
    Frame scope{{}, in.root};
    for (size_t k = 0; k < macro->names.size(); ++k) {
      const std::string& param = macro->names[k];
      const Value* given = k < args.size() ? &args[k] : nullptr;
      for (auto& [name, v] : kwargs)
        if (name == param) given = &v;
      if (given) scope.set(param, *given);
      else if (macro->conds[k]) scope.set(param, in.eval(*macro->conds[k], scope));
      else scope.set(param, Value::undefined(param));
    }
    for (auto& [name, v] : kwargs)
      if (std::find(macro->names.begin(), macro->names.end(), name) == macro->names.end())
        fail("macro '" + macro->text + "' was invoked with an unknown keyword argument '" + name + "'");
    ++in.calls;
    std::string saved = std::move(in.out);
    in.out.clear();
    const int savedLoops = in.loopDepth;
    in.loopDepth = 0;
    try {
      in.exec(macro->bodies[0], scope);
    } catch (...) {
      --in.calls;
      throw;
    }
    in.loopDepth = savedLoops;
    --in.calls;
    std::string result = std::move(in.out);
    in.out = std::move(saved);
    return Value::string(std::move(result));
  };
  Value v;
  v.kind = Kind::func;
  v.fn = std::move(fn);
  return v;
}

// ---- iteration
std::vector<Value> Interp::iterate(const Value& v, const Expr& where) {
  switch (v.kind) {
    case Kind::undefined: return {};
    case Kind::list: return v.list->items;
    case Kind::dict: {
      std::vector<Value> keys;
      for (auto& [k, x] : v.dict->items) keys.push_back(k);
      return keys;
    }
    case Kind::string: {
      step(static_cast<int64_t>(v.s.size()));
      std::vector<Value> chars;
      for (size_t i = 0; i < v.s.size();) {
        const size_t start = i;
        decodeAt(v.s, i);
        chars.push_back(Value::string(v.s.substr(start, i - start)));
      }
      return chars;
    }
    default: error(where, "'" + typeName(v) + "' object is not iterable");
  }
}

// ---- expressions
Value Interp::eval(const Expr& e, Frame& frame) {
  step();
  Deeper deeper(*this);
  switch (e.kind) {
    case Ex::literal: return e.literal;
    case Ex::name: {
      if (Value* v = frame.find(e.name)) return *v;
      return Value::undefined(e.name);
    }
    case Ex::list:
    case Ex::tuple: {
      std::vector<Value> items;
      items.reserve(e.kids.size());
      for (auto& k : e.kids) items.push_back(eval(*k, frame));
      return Value::makeList(std::move(items), e.kind == Ex::tuple);
    }
    case Ex::dict: {
      Value d = Value::makeDict();
      for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        Value key = eval(*e.kids[k], frame);
        if (key.kind == Kind::list && !key.list->tuple) error(*e.kids[k], "unhashable type: 'list'");
        if (key.kind == Kind::dict || key.kind == Kind::undefined) error(*e.kids[k], "unhashable type: '" + typeName(key) + "'");
        d.dict->set(std::move(key), eval(*e.kids[k + 1], frame));
      }
      return d;
    }
    case Ex::attr: return getAttr(eval(*e.kids[0], frame), e.name, e);
    case Ex::item: return getItem(eval(*e.kids[0], frame), eval(*e.kids[1], frame), e);
    case Ex::slice: return slice(e, frame);
    case Ex::call: return call(e, frame);
    case Ex::filter: return filter(e, frame);
    case Ex::test: {
      const bool r = test(e, frame);
      return Value::boolean(e.negated ? !r : r);
    }
    case Ex::notOp: return Value::boolean(!truthy(eval(*e.kids[0], frame)));
    case Ex::neg:
    case Ex::pos: {
      const Value v = eval(*e.kids[0], frame);
      if (v.kind == Kind::undefined) failUndefined(v);
      if (!v.isNumber()) error(e, std::string("bad operand type for unary ") + (e.kind == Ex::neg ? "-" : "+") + ": '" + typeName(v) + "'");
      if (e.kind == Ex::pos) return v.kind == Kind::boolean ? Value::integer(v.b) : v;
      if (v.kind == Kind::real) return Value::real(-v.d);
      if (v.intOf() == INT64_MIN) error(e, "integer overflow");
      return Value::integer(-v.intOf());
    }
    case Ex::andOp: {
      Value a = eval(*e.kids[0], frame);
      return truthy(a) ? eval(*e.kids[1], frame) : a;
    }
    case Ex::orOp: {
      Value a = eval(*e.kids[0], frame);
      return truthy(a) ? a : eval(*e.kids[1], frame);
    }
    case Ex::binary: return binary(e, eval(*e.kids[0], frame), eval(*e.kids[1], frame));
    case Ex::compare: {
      Value left = eval(*e.kids[0], frame);
      for (size_t k = 0; k < e.ops.size(); ++k) {
        Value right = eval(*e.kids[k + 1], frame);
        if (!compare(e, e.ops[k], left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case Ex::cond:
      if (truthy(eval(*e.kids[1], frame))) return eval(*e.kids[0], frame);
      return e.kids[2] ? eval(*e.kids[2], frame) : Value::undefined("");
  }
  return Value::undefined("");
}

Value Interp::boundMethod(const Value& self, const std::string& name) {
  auto fn = std::make_shared<FuncObj>();
  fn->name = typeName(self) + "." + name;
  fn->call = [self, name](Interp& in, std::vector<Value>& args, Kwargs& kwargs) { return in.method(self, name, args, kwargs, nullptr); };
  Value v;
  v.kind = Kind::func;
  v.fn = std::move(fn);
  return v;
}

bool Interp::isMethod(const Value& v, std::string_view name) {
  static const std::unordered_set<std::string_view> strMethods = {
      "strip", "lstrip", "rstrip", "startswith", "endswith", "split", "rsplit", "upper", "lower", "replace", "title",
      "capitalize", "find", "rfind", "count", "join", "isdigit", "isalpha", "isspace", "isupper", "islower", "isalnum", "splitlines"};
  static const std::unordered_set<std::string_view> dictMethods = {"get", "items", "keys", "values"};
  if (v.kind == Kind::string) return strMethods.contains(name);
  if (v.kind == Kind::dict) return dictMethods.contains(name);
  if (v.kind == Kind::list) return name == "index" || name == "count";
  return false;
}

Value Interp::getAttr(const Value& obj, const std::string& name, const Expr& e) {
  if (obj.kind == Kind::undefined) {
    if (obj.s.empty()) error(e, "'" + name + "' of an undefined value is undefined");
    error(e, "'" + obj.s + "' is undefined");
  }
  if (isMethod(obj, name)) return boundMethod(obj, name);
  if (obj.kind == Kind::dict || obj.kind == Kind::ns) {
    if (Value* v = obj.dict->find(name)) return *v;
  }
  return Value::undefined(name);
}

Value Interp::getItem(const Value& obj, const Value& key, const Expr& e) {
  if (obj.kind == Kind::undefined) {
    if (obj.s.empty()) error(e, "a value is undefined");
    error(e, "'" + obj.s + "' is undefined");
  }
  if (obj.kind == Kind::dict) {
    if (Value* v = obj.dict->find(key)) return *v;
  } else if ((obj.kind == Kind::list || obj.kind == Kind::string) && (key.kind == Kind::integer || key.kind == Kind::boolean)) {
    int64_t k = key.intOf();
    if (obj.kind == Kind::list) {
      const auto n = static_cast<int64_t>(obj.list->items.size());
      if (k < 0) k += n;
      if (k >= 0 && k < n) return obj.list->items[k];
    } else {
      step(static_cast<int64_t>(obj.s.size() / 16));
      const std::vector<size_t> at = codePoints(obj.s);
      const auto n = static_cast<int64_t>(at.size()) - 1;
      if (k < 0) k += n;
      if (k >= 0 && k < n) return Value::string(obj.s.substr(at[k], at[k + 1] - at[k]));
    }
  }
  if (key.kind == Kind::string) return getAttr(obj, key.s, e);
  return Value::undefined("");
}

Value Interp::slice(const Expr& e, Frame& frame) {
  const Value obj = eval(*e.kids[0], frame);
  std::optional<int64_t> bound[3];
  for (int k = 0; k < 3; ++k) {
    if (!e.kids[k + 1]) continue;
    const Value b = eval(*e.kids[k + 1], frame);
    if (b.kind == Kind::none) continue;
    if (b.kind != Kind::integer && b.kind != Kind::boolean) error(e, "slice indices must be integers or None");
    bound[k] = b.intOf();
  }
  if (obj.kind == Kind::undefined) failUndefined(obj);
  std::vector<size_t> at;
  int64_t n = 0;
  if (obj.kind == Kind::list) n = static_cast<int64_t>(obj.list->items.size());
  else if (obj.kind == Kind::string) step(static_cast<int64_t>(obj.s.size() / 16)), at = codePoints(obj.s), n = static_cast<int64_t>(at.size()) - 1;
  else return Value::undefined("");
  const int64_t stepBy = bound[2].value_or(1);
  if (stepBy == 0) error(e, "slice step cannot be zero");
  const auto clamp = [&](std::optional<int64_t> v, int64_t dflt, bool forward) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x = std::max<int64_t>(x + n, forward ? 0 : -1);
    else x = std::min<int64_t>(x, forward ? n : n - 1);
    return x;
  };
  const bool forward = stepBy > 0;
  const int64_t start = clamp(bound[0], forward ? 0 : n - 1, forward);
  const int64_t stop = clamp(bound[1], forward ? n : -1, forward);
  std::vector<int64_t> picks;
  for (int64_t k = start; forward ? k < stop : k > stop; k += stepBy) {
    picks.push_back(k);
    if (stepBy > 0 ? k > INT64_MAX - stepBy : k < INT64_MIN - stepBy) break;
  }
  step(static_cast<int64_t>(picks.size()));
  if (obj.kind == Kind::list) {
    std::vector<Value> items;
    for (int64_t k : picks) items.push_back(obj.list->items[k]);
    return Value::makeList(std::move(items), obj.list->tuple);
  }
  std::string out;
  for (int64_t k : picks) out.append(obj.s, at[k], at[k + 1] - at[k]);
  return Value::string(std::move(out));
}

void Interp::evalArgs(const Expr& e, size_t first, Frame& frame, std::vector<Value>& args, Kwargs& kwargs) {
  const size_t nkw = e.kwNames.size();
  const size_t npos = e.kids.size() - first - nkw;
  for (size_t k = 0; k < npos; ++k) args.push_back(eval(*e.kids[first + k], frame));
  for (size_t k = 0; k < nkw; ++k) kwargs.emplace_back(e.kwNames[k], eval(*e.kids[first + npos + k], frame));
}

Value Interp::call(const Expr& e, Frame& frame) {
  std::vector<Value> args;
  Kwargs kwargs;
  const Expr& callee = *e.kids[0];
  if (callee.kind == Ex::attr) {
    Value self = eval(*callee.kids[0], frame);
    if (isMethod(self, callee.name)) {
      evalArgs(e, 1, frame, args, kwargs);
      return method(self, callee.name, args, kwargs, &e);
    }
    if ((self.kind == Kind::list || self.kind == Kind::dict) && !(self.kind == Kind::dict && self.dict->find(callee.name)))
      error(e, "'" + typeName(self) + "." + callee.name + "' is not supported (templates cannot modify values)");
    Value fn = getAttr(self, callee.name, callee);
    evalArgs(e, 1, frame, args, kwargs);
    return invoke(fn, args, kwargs, e);
  }
  Value fn = eval(callee, frame);
  evalArgs(e, 1, frame, args, kwargs);
  return invoke(fn, args, kwargs, e);
}

Value Interp::invoke(const Value& fn, std::vector<Value>& args, Kwargs& kwargs, const Expr& e) {
  if (fn.kind == Kind::undefined) {
    if (fn.s.empty()) error(e, "an undefined value is not callable");
    error(e, "'" + fn.s + "' is undefined");
  }
  if (fn.kind != Kind::func) error(e, "'" + typeName(fn) + "' object is not callable");
  try {
    return fn.fn->call(*this, args, kwargs);
  } catch (const Error& err) {
    const std::string what = err.what();
    if (what.find(" at line ") != std::string::npos || what.starts_with("[chat_template] raise_exception")) throw;
    fail(what.substr(std::strlen("[chat_template] ")) + " at " + src.where(e.offset));
  }
}

// ---- operators
Value Interp::binary(const Expr& e, const Value& a, const Value& b) {
  const std::string& op = e.name;
  if (op == "~") {
    std::string out = a.kind == Kind::string ? a.s : str(a);
    out += b.kind == Kind::string ? b.s : str(b);
    step(static_cast<int64_t>(out.size() / 256));
    return Value::string(std::move(out));
  }
  if (a.kind == Kind::undefined) failUndefined(a);
  if (b.kind == Kind::undefined) failUndefined(b);
  const auto unsupported = [&]() -> Value {
    error(e, "unsupported operand type(s) for " + op + ": '" + typeName(a) + "' and '" + typeName(b) + "'");
  };
  if (op == "+") {
    if (a.kind == Kind::string && b.kind == Kind::string) {
      step(static_cast<int64_t>((a.s.size() + b.s.size()) / 256));
      if (a.s.size() + b.s.size() > kMaxString) error(e, "a string is longer than " + std::to_string(kMaxString) + " bytes");
      return Value::string(a.s + b.s);
    }
    if (a.kind == Kind::list && b.kind == Kind::list && a.list->tuple == b.list->tuple) {
      std::vector<Value> items = a.list->items;
      items.insert(items.end(), b.list->items.begin(), b.list->items.end());
      step(static_cast<int64_t>(items.size()));
      return Value::makeList(std::move(items), a.list->tuple);
    }
    if (a.kind == Kind::string || b.kind == Kind::string) {
      if (a.kind == Kind::string) error(e, "can only concatenate str (not \"" + typeName(b) + "\") to str");
      return unsupported();
    }
  }
  if (op == "*" && (a.kind == Kind::string || b.kind == Kind::string)) {
    const Value& text = a.kind == Kind::string ? a : b;
    const Value& times = a.kind == Kind::string ? b : a;
    if (times.kind != Kind::integer && times.kind != Kind::boolean) return unsupported();
    const int64_t n = std::max<int64_t>(times.intOf(), 0);
    if (!text.s.empty() && n > static_cast<int64_t>(kMaxString / text.s.size())) error(e, "a string is longer than " + std::to_string(kMaxString) + " bytes");
    step(static_cast<int64_t>(text.s.size() * static_cast<size_t>(n) / 256));
    std::string out;
    if (text.s.size() == 1) {
      out.assign(static_cast<size_t>(n), text.s[0]);
    } else {
      out.reserve(text.s.size() * static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) out += text.s;
    }
    return Value::string(std::move(out));
  }
  if (op == "%" && a.kind == Kind::string) error(e, "'%' string formatting is not supported");
  if (!a.isNumber() || !b.isNumber()) return unsupported();
  const bool ints = a.kind != Kind::real && b.kind != Kind::real;
  if (op == "/") {
    if (b.num() == 0) error(e, "division by zero");
    return Value::real(a.num() / b.num());
  }
  if (ints) {
    const int64_t x = a.intOf(), y = b.intOf();
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(x, y, &r)) error(e, "integer overflow");
      return Value::integer(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(x, y, &r)) error(e, "integer overflow");
      return Value::integer(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(x, y, &r)) error(e, "integer overflow");
      return Value::integer(r);
    }
    if (op == "//" || op == "%") {
      if (y == 0) error(e, op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) error(e, "integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
      return Value::integer(op == "//" ? q : m);
    }
    if (op == "**") {
      if (y < 0) return Value::real(std::pow(static_cast<double>(x), static_cast<double>(y)));
      int64_t result = 1;
      for (int64_t k = 0; k < y; ++k) {
        if (__builtin_mul_overflow(result, x, &result)) error(e, "integer overflow");
        if (result == 0 || result == 1) break;
        if (result == -1) {
          result = ((y - k - 1) % 2 == 0) ? -1 : 1;
          break;
        }
      }
      return Value::integer(result);
    }
  }
  const double x = a.num(), y = b.num();
  if (op == "+") return Value::real(x + y);
  if (op == "-") return Value::real(x - y);
  if (op == "*") return Value::real(x * y);
  if (op == "**") return Value::real(std::pow(x, y));
  if (op == "//" || op == "%") {
    if (y == 0) error(e, "float division by zero");
    const double m = std::fmod(x, y);
    const double mod = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
    return Value::real(op == "%" ? mod : std::floor((x - mod) / y + 0.5 - 0.5));
  }
  return unsupported();
}

bool Interp::contains(const Expr& e, const Value& needle, const Value& hay) {
  switch (hay.kind) {
    case Kind::undefined: return false;
    case Kind::string:
      if (needle.kind != Kind::string) error(e, "'in <string>' requires string as left operand, not " + typeName(needle));
      return hay.s.find(needle.s) != std::string::npos;
    case Kind::list:
      for (auto& x : hay.list->items)
        if (equal(x, needle)) return true;
      return false;
    case Kind::dict: return hay.dict->find(needle) != nullptr;
    default: error(e, "argument of type '" + typeName(hay) + "' is not iterable");
  }
}

// -1, 0, 1 for < == >; Python's ordering for numbers, strings, lists.
int Interp::order(const Expr& e, const std::string& op, const Value& a, const Value& b) {
  if (a.kind == Kind::undefined) failUndefined(a);
  if (b.kind == Kind::undefined) failUndefined(b);
  if (a.isNumber() && b.isNumber()) {
    if (a.kind != Kind::real && b.kind != Kind::real) return a.intOf() < b.intOf() ? -1 : a.intOf() > b.intOf();
    return a.num() < b.num() ? -1 : a.num() > b.num() ? 1 : 0;
  }
  if (a.kind == Kind::string && b.kind == Kind::string) return a.s < b.s ? -1 : a.s > b.s;
  if (a.kind == Kind::list && b.kind == Kind::list && a.list->tuple == b.list->tuple) {
    const auto& x = a.list->items;
    const auto& y = b.list->items;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k)
      if (!equal(x[k], y[k])) return order(e, op, x[k], y[k]);
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  error(e, "'" + op + "' not supported between instances of '" + typeName(a) + "' and '" + typeName(b) + "'");
}

bool Interp::compare(const Expr& e, const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "in") return contains(e, a, b);
  if (op == "not in") return !contains(e, a, b);
  const int c = order(e, op, a, b);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

namespace {

void addGlobals(Frame& globals) {
  globals.set("raise_exception", function("raise_exception", [](Interp&, std::vector<Value>& args, Kwargs&) -> Value {
                const std::string message = args.empty() ? std::string() : str(args[0]);
                throw Error("[chat_template] raise_exception: " + message);
              }));
  globals.set("range", function("range", [](Interp& in, std::vector<Value>& args, Kwargs&) {
                if (args.empty() || args.size() > 3) fail("range expects 1 to 3 arguments");
                for (auto& a : args)
                  if (a.kind != Kind::integer && a.kind != Kind::boolean) fail("range's arguments must be integers, not " + typeName(a));
                int64_t start = 0, stop = 0, by = 1;
                if (args.size() == 1) stop = args[0].intOf();
                else start = args[0].intOf(), stop = args[1].intOf();
                if (args.size() == 3) by = args[2].intOf();
                if (by == 0) fail("range() arg 3 must not be zero");
                const long double count = by > 0 ? std::ceil((static_cast<long double>(stop) - start) / by) : std::ceil((static_cast<long double>(start) - stop) / -by);
                if (count > kMaxRange) fail("range too big, the sandbox allows at most " + std::to_string(kMaxRange) + " items");
                std::vector<Value> items;
                for (int64_t k = start; by > 0 ? k < stop : k > stop; k += by) items.push_back(Value::integer(k));
                in.step(static_cast<int64_t>(items.size()));
                return Value::makeList(std::move(items));
              }));
  const auto makeDict = [](Kind kind) {
    return [kind](Interp&, std::vector<Value>& args, Kwargs& kwargs) {
      Value d = Value::makeDict();
      d.kind = kind;
      for (auto& a : args) {
        if (a.kind != Kind::dict) fail("namespace() and dict() take a mapping or keyword arguments");
        for (auto& [k, v] : a.dict->items) d.dict->set(k, v);
      }
      for (auto& [k, v] : kwargs) d.dict->set(Value::string(k), v);
      return d;
    };
  };
  globals.set("namespace", function("namespace", makeDict(Kind::ns)));
  globals.set("dict", function("dict", makeDict(Kind::dict)));
  globals.set("strftime_now", function("strftime_now", [](Interp&, std::vector<Value>& args, Kwargs&) {
                if (args.size() != 1 || args[0].kind != Kind::string) fail("strftime_now expects one format string");
                if (args[0].s.size() > 256) fail("strftime_now: the format is longer than 256 bytes");
                const std::time_t now = std::time(nullptr);
                std::tm local{};
                localtime_r(&now, &local);
                char buf[4096];
                const size_t n = args[0].s.empty() ? 0 : std::strftime(buf, sizeof buf, args[0].s.c_str(), &local);
                return Value::string(std::string(buf, n));
              }));
}

}  // namespace
}  // namespace jinja

using namespace jinja;

struct ChatTemplate::Impl {
  Source source;
  Body body;
  explicit Impl(std::string_view text) : source(text) {}
};

ChatTemplate ChatTemplate::parse(std::string_view source) {
  auto impl = std::make_shared<Impl>(source);
  impl->body = parseTemplate(impl->source);
  return ChatTemplate(std::move(impl));
}

std::string ChatTemplate::apply(const std::vector<ChatMessage>& messages, const ChatContext& context) const {
  Frame globals;
  addGlobals(globals);
  for (const auto& [k, v] : context.strings) globals.set(k, Value::string(v));
  for (const auto& [k, v] : context.flags) globals.set(k, Value::boolean(v));
  std::vector<Value> list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    Value d = Value::makeDict();
    d.dict->items.emplace_back(Value::string("role"), Value::string(m.role));
    d.dict->items.emplace_back(Value::string("content"), Value::string(m.content));
    list.push_back(std::move(d));
  }
  globals.set("messages", Value::makeList(std::move(list)));
  globals.set("tools", Value::none());
  globals.set("documents", Value::none());
  globals.set("add_generation_prompt", Value::boolean(context.addGenerationPrompt));
  globals.set("bos_token", Value::string(context.bosToken));
  globals.set("eos_token", Value::string(context.eosToken));
  Frame top{{}, &globals};
  Interp in(impl_->source);
  in.root = &top;
  in.maxSteps = kMaxSteps + kStepsPerMessage * static_cast<int64_t>(std::min<size_t>(messages.size(), 1'000'000));
  in.exec(impl_->body, top);
  return std::move(in.out);
}

std::optional<std::string> chatTemplateOf(const std::string& modelPath) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path(modelPath);
  if (fs::is_regular_file(path, ec)) {
    char magic[4] = {};
    std::ifstream(path, std::ios::binary).read(magic, 4);
    if (std::memcmp(magic, "GGUF", 4) == 0) {
      const io::Checkpoint checkpoint = io::Checkpoint::open(modelPath);
      const io::MetaValue* value = checkpoint.meta("tokenizer.chat_template");
      if (!value) return std::nullopt;
      if (value->kind() != io::MetaValue::Kind::string) fail(modelPath + ": tokenizer.chat_template is not a string");
      return value->asString();
    }
  }
  const fs::path folder = fs::is_directory(path, ec) ? path : path.parent_path();
  const fs::path config = folder / "tokenizer_config.json";
  if (!fs::is_regular_file(config, ec)) return std::nullopt;
  std::ifstream in(config, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) fail(config.string() + ": not valid JSON");
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& entry : *it)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") && entry["template"].is_string())
        return entry["template"].get<std::string>();
    fail(config.string() + ": chat_template is a list without a \"default\" entry");
  }
  fail(config.string() + ": chat_template is neither a string nor a list of {name, template}");
}

}  // namespace radix
