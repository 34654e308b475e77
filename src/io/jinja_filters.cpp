// The chat-template evaluator's builtins (src/io/jinja.h): str/list/dict methods, filters and
// tests, as jinja2 and transformers' sandbox define them.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "io/jinja.h"

namespace radix {
namespace jinja {

// ---- str, list and dict methods
const Value* Interp::arg(std::vector<Value>& args, Kwargs& kwargs, size_t index, std::string_view name) {
  if (index < args.size()) return &args[index];
  for (auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

const std::string& Interp::needString(const Value* v, const char* what) {
  if (!v || v->kind != Kind::string) fail(std::string(what) + " must be a string");
  return v->s;
}

Value Interp::method(const Value& self, const std::string& name, std::vector<Value>& args, Kwargs& kwargs, const Expr* where) {
  (void)where;
  if (self.kind == Kind::dict) {
    if (name == "get") {
      const Value* key = arg(args, kwargs, 0, "key");
      if (!key) fail("dict.get needs a key");
      if (Value* v = self.dict->find(*key)) return *v;
      const Value* dflt = arg(args, kwargs, 1, "default");
      return dflt ? *dflt : Value::none();
    }
    std::vector<Value> items;
    for (auto& [k, v] : self.dict->items) {
      if (name == "items") items.push_back(Value::makeList({k, v}, true));
      else items.push_back(name == "keys" ? k : v);
    }
    return Value::makeList(std::move(items));
  }
  if (self.kind == Kind::list) {
    const Value* x = arg(args, kwargs, 0, "value");
    if (!x) fail("list." + name + " needs an argument");
    int64_t count = 0;
    for (size_t k = 0; k < self.list->items.size(); ++k)
      if (equal(self.list->items[k], *x)) {
        if (name == "index") return Value::integer(static_cast<int64_t>(k));
        ++count;
      }
    if (name == "index") fail(repr(*x) + " is not in list");
    return Value::integer(count);
  }
  const std::string& s = self.s;
  step(static_cast<int64_t>(s.size() / 64));
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = arg(args, kwargs, 0, "chars");
    const std::string* set = chars && chars->kind != Kind::none ? &needString(chars, "the characters to strip") : nullptr;
    return Value::string(pyStrip(s, set, name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    const Value* x = arg(args, kwargs, 0, "prefix");
    if (!x) fail("str." + name + " needs an argument");
    std::vector<const std::string*> options;
    if (x->kind == Kind::list && x->list->tuple) {
      for (auto& o : x->list->items) options.push_back(&needString(&o, "str.startswith's tuple items"));
    } else {
      options.push_back(&needString(x, ("str." + name + "'s argument").c_str()));
    }
    for (const std::string* o : options)
      if (name == "startswith" ? s.starts_with(*o) : s.ends_with(*o)) return Value::boolean(true);
    return Value::boolean(false);
  }
  if (name == "split" || name == "rsplit") {
    const Value* sep = arg(args, kwargs, 0, "sep");
    const Value* maxv = arg(args, kwargs, 1, "maxsplit");
    int64_t maxsplit = maxv && maxv->kind != Kind::none ? maxv->intOf() : -1;
    std::vector<Value> parts;
    if (!sep || sep->kind == Kind::none) {
      if (name == "rsplit" && maxsplit >= 0) fail("str.rsplit with maxsplit and no separator is not supported");
      size_t i = 0;
      while (i < s.size()) {
        size_t q = i;
        while (q < s.size()) {
          size_t r = q;
          if (!isPySpace(decodeAt(s, r))) break;
          q = r;
        }
        i = q;
        if (i >= s.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
          parts.push_back(Value::string(pyStrip(s.substr(i), nullptr, false, true)));
          break;
        }
        size_t end = i;
        while (end < s.size()) {
          size_t r = end;
          if (isPySpace(decodeAt(s, r))) break;
          end = r;
        }
        parts.push_back(Value::string(s.substr(i, end - i)));
        i = end;
      }
      return Value::makeList(std::move(parts));
    }
    const std::string& by = needString(sep, "the separator");
    if (by.empty()) fail("empty separator");
    if (name == "split") {
      size_t i = 0;
      while (true) {
        const size_t at = (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) ? std::string::npos : s.find(by, i);
        if (at == std::string::npos) {
          parts.push_back(Value::string(s.substr(i)));
          break;
        }
        parts.push_back(Value::string(s.substr(i, at - i)));
        i = at + by.size();
      }
    } else {
      size_t end = s.size();
      std::vector<Value> rev;
      while (true) {
        size_t at = std::string::npos;
        if (!(maxsplit >= 0 && static_cast<int64_t>(rev.size()) >= maxsplit) && end >= by.size()) at = s.rfind(by, end - by.size());
        if (at == std::string::npos) {
          rev.push_back(Value::string(s.substr(0, end)));
          break;
        }
        rev.push_back(Value::string(s.substr(at + by.size(), end - at - by.size())));
        end = at;
      }
      parts.assign(rev.rbegin(), rev.rend());
    }
    return Value::makeList(std::move(parts));
  }
  if (name == "upper") return Value::string(asciiUpper(s));
  if (name == "lower") return Value::string(asciiLower(s));
  if (name == "title") {
    std::string out = s;
    bool prevCased = false;
    for (char& c : out) {
      if (isAsciiAlpha(c)) {
        c = prevCased ? asciiLower(std::string(1, c))[0] : asciiUpper(std::string(1, c))[0];
        prevCased = true;
      } else {
        prevCased = false;
      }
    }
    return Value::string(out);
  }
  if (name == "capitalize") {
    std::string out = asciiLower(s);
    if (!out.empty()) out[0] = asciiUpper(out.substr(0, 1))[0];
    return Value::string(out);
  }
  if (name == "replace") {
    const std::string& from = needString(arg(args, kwargs, 0, "old"), "str.replace's first argument");
    const std::string& to = needString(arg(args, kwargs, 1, "new"), "str.replace's second argument");
    const Value* countV = arg(args, kwargs, 2, "count");
    return Value::string(replaceAll(s, from, to, countV && countV->kind != Kind::none ? countV->intOf() : -1));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    const std::string& sub = needString(arg(args, kwargs, 0, "sub"), ("str." + name + "'s argument").c_str());
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(codePointCount(s)) + 1);
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value::integer(n);
    }
    const size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
    return Value::integer(at == std::string::npos ? -1 : static_cast<int64_t>(codePointCount(s.substr(0, at))));
  }
  if (name == "join") {
    const Value* items = arg(args, kwargs, 0, "iterable");
    if (!items) fail("str.join needs an argument");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(*items, *(where ? where : &dummyExpr()))) {
      if (item.kind != Kind::string) fail("str.join: expected str instance, " + typeName(item) + " found");
      if (!first) out += s;
      first = false;
      out += item.s;
      if (out.size() > kMaxString) fail("a string is too long");
    }
    return Value::string(std::move(out));
  }
  if (name == "splitlines") {
    std::vector<Value> parts;
    size_t i = 0;
    while (i < s.size()) {
      const size_t at = s.find('\n', i);
      if (at == std::string::npos) {
        parts.push_back(Value::string(s.substr(i)));
        break;
      }
      parts.push_back(Value::string(s.substr(i, at - i)));
      i = at + 1;
    }
    return Value::makeList(std::move(parts));
  }
  // is* predicates (ASCII classes; whitespace as Python's)
  if (s.empty()) return Value::boolean(false);
  bool all = true, anyCased = false;
  for (size_t i = 0; i < s.size() && all;) {
    const uint32_t c = decodeAt(s, i);
    const bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
    anyCased |= upper || lower;
    if (name == "isdigit") all = digit;
    else if (name == "isalpha") all = upper || lower;
    else if (name == "isalnum") all = upper || lower || digit;
    else if (name == "isspace") all = isPySpace(c);
    else if (name == "isupper") all = !lower;
    else if (name == "islower") all = !upper;
  }
  if (name == "isupper" || name == "islower") return Value::boolean(all && anyCased);
  return Value::boolean(all);
}

const Expr& Interp::dummyExpr() {
  static const Expr e = [] {
    Expr x;
    x.kind = Ex::literal;
    return x;
  }();
  return e;
}

std::string Interp::replaceAll(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {
    int64_t done = 0;
    for (size_t i = 0; i < s.size();) {
      if (count < 0 || done < count) out += to, ++done;
      const size_t start = i;
      decodeAt(s, i);
      out.append(s, start, i - start);
      if (out.size() > kMaxString) fail("a string is too long");
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t i = 0;
  int64_t done = 0;
  while (true) {
    const size_t at = (count >= 0 && done >= count) ? std::string::npos : s.find(from, i);
    if (at == std::string::npos) break;
    out.append(s, i, at - i);
    out += to;
    if (out.size() > kMaxString) fail("a string is too long");
    i = at + from.size();
    ++done;
  }
  out.append(s, i);
  return out;
}

// ---- filters
Value Interp::filter(const Expr& e, Frame& frame) {
  Value v = eval(*e.kids[0], frame);
  std::vector<Value> args;
  Kwargs kwargs;
  evalArgs(e, 1, frame, args, kwargs);
  try {
    return applyFilter(e, e.name, v, args, kwargs, frame);
  } catch (const Error& err) {
    const std::string what = err.what();
    if (what.find(" at line ") != std::string::npos) throw;
    fail(what.substr(std::strlen("[chat_template] ")) + " (filter " + e.name + ") at " + src.where(e.offset));
  }
}

int64_t Interp::needInt(const Value* v, const char* what) {
  if (!v || (v->kind != Kind::integer && v->kind != Kind::boolean)) fail(std::string(what) + " must be an integer");
  return v->intOf();
}

Value Interp::getPath(const Value& item, const std::string& path, const Expr& e) {
  Value cur = item;
  size_t i = 0;
  while (i <= path.size()) {
    const size_t dot = std::min(path.find('.', i), path.size());
    const std::string part = path.substr(i, dot - i);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), isDigit);
    if (digits && part.size() < 18) cur = getItem(cur, Value::integer(std::stoll(part)), e);
    else cur = getItem(cur, Value::string(part), e);
    i = dot + 1;
  }
  return cur;
}

Value Interp::applyFilter(const Expr& e, const std::string& name, Value v, std::vector<Value>& args, Kwargs& kwargs, Frame& frame) {
  (void)frame;
  const auto needDefined = [&](const Value& x) {
    if (x.kind == Kind::undefined) failUndefined(x);
  };
  if (name == "default" || name == "d") {
    const Value* dflt = arg(args, kwargs, 0, "default_value");
    const Value* boolean = arg(args, kwargs, 1, "boolean");
    if (v.kind == Kind::undefined || (boolean && truthy(*boolean) && !truthy(v))) return dflt ? *dflt : Value::string("");
    return v;
  }
  if (name == "trim") {
    const Value* chars = arg(args, kwargs, 0, "chars");
    const std::string* set = chars && chars->kind != Kind::none ? &needString(chars, "trim's characters") : nullptr;
    return Value::string(pyStrip(str(v), set, true, true));
  }
  if (name == "length" || name == "count") {
    switch (v.kind) {
      case Kind::undefined: return Value::integer(0);
      case Kind::string: return Value::integer(static_cast<int64_t>(codePointCount(v.s)));
      case Kind::list: return Value::integer(static_cast<int64_t>(v.list->items.size()));
      case Kind::dict: return Value::integer(static_cast<int64_t>(v.dict->items.size()));
      default: fail("object of type '" + typeName(v) + "' has no len()");
    }
  }
  if (name == "upper") return Value::string(asciiUpper(str(v)));
  if (name == "lower") return Value::string(asciiLower(str(v)));
  if (name == "string") return v.kind == Kind::string ? v : Value::string(str(v));
  if (name == "safe" || name == "e" || name == "escape") {
    if (name != "safe") fail("escape is not supported (templates render without autoescaping)");
    return v;
  }
  if (name == "capitalize" || name == "title") {
    std::vector<Value> none;
    Kwargs noKw;
    if (name == "capitalize") return method(Value::string(str(v)), "capitalize", none, noKw, &e);
    // jinja2's title: the first letter of each word (after space, -, (, {, [, <) upper, the rest lower.
    std::string s = str(v), out;
    bool start = true;
    for (char c : s) {
      const bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '-' || c == '(' ||
                       c == '{' || c == '[' || c == '<';
      out += start && !sep ? asciiUpper(std::string(1, c))[0] : asciiLower(std::string(1, c))[0];
      start = sep;
    }
    return Value::string(out);
  }
  if (name == "tojson") {
    JsonStyle style;
    if (const Value* ensure = arg(args, kwargs, 0, "ensure_ascii"); ensure && truthy(*ensure)) fail("tojson: ensure_ascii=True is not supported");
    if (const Value* indent = arg(args, kwargs, 1, "indent"); indent && indent->kind != Kind::none) {
      if (indent->kind == Kind::string) style.indent = indent->s;
      else style.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(needInt(indent, "tojson's indent"), 0, 64)), ' ');
      style.itemSep = ",";
    }
    if (const Value* seps = arg(args, kwargs, 2, "separators"); seps && seps->kind != Kind::none) {
      if (seps->kind != Kind::list || seps->list->items.size() != 2) fail("tojson: separators must be a pair of strings");
      style.itemSep = needString(&seps->list->items[0], "tojson's separators");
      style.keySep = needString(&seps->list->items[1], "tojson's separators");
    }
    if (const Value* sortKeys = arg(args, kwargs, 3, "sort_keys")) style.sortKeys = truthy(*sortKeys);
    std::string out;
    toJson(out, v, style, 0);
    return Value::string(std::move(out));
  }
  if (name == "first" || name == "last") {
    needDefined(v);
    std::vector<Value> items = iterate(v, e);
    if (items.empty()) return Value::undefined("");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    const Value* sep = arg(args, kwargs, 0, "d");
    const Value* attribute = arg(args, kwargs, 1, "attribute");
    const std::string by = sep ? str(*sep) : "";
    std::string out;
    bool first = true;
    for (Value& item : iterate(v, e)) {
      if (!first) out += by;
      first = false;
      out += str(attribute && attribute->kind != Kind::none ? getPath(item, str(*attribute), e) : item);
      if (out.size() > kMaxString) fail("a string is too long");
    }
    return Value::string(std::move(out));
  }
  if (name == "replace") {
    const std::string& from = needString(arg(args, kwargs, 0, "old"), "replace's first argument");
    const std::string& to = needString(arg(args, kwargs, 1, "new"), "replace's second argument");
    const Value* countV = arg(args, kwargs, 2, "count");
    return Value::string(replaceAll(str(v), from, to, countV && countV->kind != Kind::none ? countV->intOf() : -1));
  }
  if (name == "int" || name == "float") {
    const Value* dflt = arg(args, kwargs, 0, "default");
    const Value fallback = dflt ? *dflt : (name == "int" ? Value::integer(0) : Value::real(0));
    double real = 0;
    if (v.isNumber()) {
      real = v.num();
      if (name == "int" && v.kind != Kind::real) return Value::integer(v.intOf());
    } else if (v.kind == Kind::string) {
      const std::string t = pyStrip(v.s, nullptr, true, true);
      int64_t i = 0;
      auto [ptr, ec] = std::from_chars(t.data() + (t.starts_with("+") ? 1 : 0), t.data() + t.size(), i);
      if (name == "int" && ec == std::errc() && ptr == t.data() + t.size() && !t.empty()) return Value::integer(i);
      char* end = nullptr;
      real = std::strtod(t.c_str(), &end);
      if (t.empty() || end != t.c_str() + t.size()) return fallback;
    } else {
      return fallback;
    }
    if (name == "float") return Value::real(real);
    if (!std::isfinite(real) || std::fabs(real) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(real));
  }
  if (name == "abs") {
    if (v.kind == Kind::real) return Value::real(std::fabs(v.d));
    if (v.kind == Kind::integer || v.kind == Kind::boolean) {
      if (v.intOf() == INT64_MIN) fail("integer overflow");
      return Value::integer(std::llabs(v.intOf()));
    }
    fail("bad operand type for abs(): '" + typeName(v) + "'");
  }
  if (name == "round") {
    if (!v.isNumber()) fail("round needs a number");
    const Value* precision = arg(args, kwargs, 0, "precision");
    const Value* method = arg(args, kwargs, 1, "method");
    const int64_t digits = precision ? std::clamp<int64_t>(needInt(precision, "round's precision"), 0, 15) : 0;
    const std::string how = method ? needString(method, "round's method") : "common";
    const double scale = std::pow(10.0, static_cast<double>(digits));
    const double x = v.num() * scale;
    const double r = how == "floor" ? std::floor(x) : how == "ceil" ? std::ceil(x) : std::nearbyint(x);  // Python rounds half to even
    return Value::real(r / scale);
  }
  if (name == "items") {
    if (v.kind == Kind::undefined) return Value::makeList({});
    if (v.kind != Kind::dict) fail("can only get item pairs from a mapping");
    std::vector<Value> none;
    Kwargs noKw;
    return method(v, "items", none, noKw, &e);
  }
  if (name == "list") {
    needDefined(v);
    return Value::makeList(iterate(v, e));
  }
  if (name == "reverse") {
    needDefined(v);
    if (v.kind == Kind::string) {
      std::vector<Value> chars = iterate(v, e);
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->s;
      return Value::string(std::move(out));
    }
    std::vector<Value> items = iterate(v, e);
    std::reverse(items.begin(), items.end());
    return Value::makeList(std::move(items));
  }
  if (name == "unique") {
    std::vector<Value> out;
    for (Value& item : iterate(v, e)) {
      const bool seen = std::any_of(out.begin(), out.end(), [&](const Value& x) {
        return item.kind == Kind::string && x.kind == Kind::string ? asciiLower(x.s) == asciiLower(item.s) : equal(x, item);
      });
      if (!seen) out.push_back(item);
    }
    return Value::makeList(std::move(out));
  }
  if (name == "sum") {
    const Value* start = arg(args, kwargs, 1, "start");
    Value total = start ? *start : Value::integer(0);
    const Value* attribute = arg(args, kwargs, 0, "attribute");
    for (Value& item : iterate(v, e)) total = binary(plusExpr(e), total, attribute ? getPath(item, str(*attribute), e) : item);
    return total;
  }
  if (name == "min" || name == "max" || name == "sort") {
    std::vector<Value> items = iterate(v, e);
    const Value* attribute = arg(args, kwargs, name == "sort" ? 2 : 1, "attribute");
    const Value* reverse = name == "sort" ? arg(args, kwargs, 0, "reverse") : nullptr;
    const auto key = [&](const Value& x) {
      Value k = attribute ? getPath(x, str(*attribute), e) : x;
      if (k.kind == Kind::string) k.s = asciiLower(k.s);
      return k;
    };
    step(static_cast<int64_t>(items.size()) * 8);
    stableSort(items, [&](const Value& a, const Value& b) { return order(e, "<", key(a), key(b)) < 0; });
    if (name == "sort") {
      if (reverse && truthy(*reverse)) {
        stableSort(items, [&](const Value& a, const Value& b) { return order(e, "<", key(b), key(a)) < 0; });
      }
      return Value::makeList(std::move(items));
    }
    if (items.empty()) return Value::undefined("");
    return name == "min" ? items.front() : items.back();
  }
  if (name == "dictsort") {
    if (v.kind != Kind::dict) fail("dictsort needs a mapping");
    std::vector<Value> none;
    Kwargs noKw;
    Value items = method(v, "items", none, noKw, &e);
    stableSort(items.list->items, [&](const Value& a, const Value& b) {
      Value x = a.list->items[0], y = b.list->items[0];
      if (x.kind == Kind::string) x.s = asciiLower(x.s);
      if (y.kind == Kind::string) y.s = asciiLower(y.s);
      return order(e, "<", x, y) < 0;
    });
    return items;
  }
  if (name == "attr") return getAttr(v, needString(arg(args, kwargs, 0, "name"), "attr's name"), e);
  if (name == "indent") {
    const Value* widthV = arg(args, kwargs, 0, "width");
    const Value* firstV = arg(args, kwargs, 1, "first");
    const Value* blankV = arg(args, kwargs, 2, "blank");
    std::string pad = widthV && widthV->kind == Kind::string ? widthV->s : std::string(static_cast<size_t>(std::clamp<int64_t>(widthV ? needInt(widthV, "indent's width") : 4, 0, 256)), ' ');
    const std::string s = str(v);
    std::string out;
    size_t i = 0;
    bool firstLine = true;
    while (i <= s.size()) {
      size_t nl = s.find('\n', i);
      const bool last = nl == std::string::npos;
      if (last) nl = s.size();
      const std::string line = s.substr(i, nl - i);
      const bool indentIt = firstLine ? (firstV && truthy(*firstV)) : (!line.empty() || (blankV && truthy(*blankV)));
      if (indentIt) out += pad;
      out += line;
      if (!last) out += '\n';
      if (out.size() > kMaxString) fail("a string is too long");
      firstLine = false;
      if (last) break;
      i = nl + 1;
    }
    return Value::string(std::move(out));
  }
  if (name == "wordcount") {
    std::vector<Value> none;
    Kwargs noKw;
    return Value::integer(static_cast<int64_t>(method(Value::string(str(v)), "split", none, noKw, &e).list->items.size()));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr" || name == "map") {
    const bool byAttr = name == "selectattr" || name == "rejectattr";
    std::vector<Value> out;
    if (!truthy(v)) return Value::makeList({});  // jinja2 skips a falsy input (none|selectattr(...) is empty)
    std::vector<Value> rest(args.begin() + std::min<size_t>(args.size(), byAttr ? 1 : 0), args.end());
    std::string attribute;
    if (byAttr) attribute = needString(arg(args, kwargs, 0, "attribute"), (name + "'s attribute").c_str());
    if (name == "map") {
      for (auto& [k, x] : kwargs)
        if (k == "attribute") attribute = str(x);
      const Value* dflt = nullptr;
      for (auto& [k, x] : kwargs)
        if (k == "default") dflt = &x;
      if (attribute.empty() && rest.empty()) fail("map needs a filter name or attribute=");
      for (Value& item : iterate(v, e)) {
        if (!attribute.empty()) {
          Value got = getPath(item, attribute, e);
          out.push_back(got.kind == Kind::undefined && dflt ? *dflt : got);
        } else {
          const std::string filterName = needString(&rest[0], "map's filter name");
          if (!knownFilters().contains(filterName)) fail("no filter named '" + filterName + "'");
          std::vector<Value> fargs(rest.begin() + 1, rest.end());
          Kwargs fkw;
          out.push_back(applyFilter(e, filterName, item, fargs, fkw, frame));
        }
      }
      return Value::makeList(std::move(out));
    }
    const bool keep = name == "select" || name == "selectattr";
    std::string testName;
    std::vector<Value> testArgs;
    if (!rest.empty()) {
      testName = needString(&rest[0], (name + "'s test name").c_str());
      testArgs.assign(rest.begin() + 1, rest.end());
      if (!knownTests().contains(testName)) fail("no test named '" + testName + "'");
    }
    for (Value& item : iterate(v, e)) {
      const Value subject = byAttr ? getPath(item, attribute, e) : item;
      const bool passed = testName.empty() ? truthy(subject) : applyTest(e, testName, subject, testArgs);
      if (passed == keep) out.push_back(item);
    }
    return Value::makeList(std::move(out));
  }
  fail("the filter '" + name + "' is not implemented");
}

const Expr& Interp::plusExpr(const Expr& where) {
  thread_local Expr e;
  e.kind = Ex::binary;
  e.name = "+";
  e.offset = where.offset;
  return e;
}

// ---- tests
bool Interp::test(const Expr& e, Frame& frame) {
  Value v = eval(*e.kids[0], frame);
  std::vector<Value> args;
  Kwargs kwargs;
  evalArgs(e, 1, frame, args, kwargs);
  for (auto& [k, x] : kwargs) args.push_back(x);
  return applyTest(e, e.name, v, args);
}

bool Interp::applyTest(const Expr& e, const std::string& name, const Value& v, const std::vector<Value>& args) {
  const auto other = [&]() -> const Value& {
    if (args.empty()) error(e, "the test '" + name + "' needs an argument");
    return args[0];
  };
  if (name == "defined") return v.kind != Kind::undefined;
  if (name == "undefined") return v.kind == Kind::undefined;
  if (name == "none") return v.kind == Kind::none;
  if (name == "boolean") return v.kind == Kind::boolean;
  if (name == "true") return v.kind == Kind::boolean && v.b;
  if (name == "false") return v.kind == Kind::boolean && !v.b;
  if (name == "string") return v.kind == Kind::string;
  if (name == "number") return v.isNumber();
  if (name == "integer") return v.kind == Kind::integer;
  if (name == "float") return v.kind == Kind::real;
  if (name == "mapping") return v.kind == Kind::dict;
  if (name == "iterable") return v.kind == Kind::string || v.kind == Kind::list || v.kind == Kind::dict || v.kind == Kind::undefined;
  if (name == "sequence") return v.kind == Kind::string || v.kind == Kind::list || v.kind == Kind::dict || v.kind == Kind::undefined;
  if (name == "callable") return v.kind == Kind::func;
  if (name == "escaped") return false;
  if (name == "filter") return v.kind == Kind::string && knownFilters().contains(v.s);
  if (name == "test") return v.kind == Kind::string && knownTests().contains(v.s);
  if (name == "lower" || name == "upper") {
    if (v.kind != Kind::string) return false;
    return (name == "lower" ? asciiLower(v.s) : asciiUpper(v.s)) == v.s;
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (v.kind == Kind::undefined) failUndefined(v);
    if (v.kind != Kind::integer && v.kind != Kind::boolean) error(e, "the test '" + name + "' needs an integer");
    const int64_t x = v.intOf();
    if (name == "odd") return x % 2 != 0;
    if (name == "even") return x % 2 == 0;
    const Value& d = other();
    if (d.kind != Kind::integer || d.i == 0) error(e, "divisibleby needs a nonzero integer");
    return x % d.i == 0;
  }
  if (name == "sameas") {
    const Value& o = other();
    if (v.kind != o.kind) return false;
    if (v.kind == Kind::none || v.kind == Kind::undefined) return true;
    if (v.kind == Kind::boolean) return v.b == o.b;
    if (v.kind == Kind::list) return v.list == o.list;
    if (v.kind == Kind::dict || v.kind == Kind::ns) return v.dict == o.dict;
    return equal(v, o);
  }
  if (name == "in") return contains(e, v, other());
  static const std::pair<const char*, const char*> ops[] = {{"eq", "=="}, {"equalto", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="},
                                                            {"lt", "<"}, {"lessthan", "<"}, {"<", "<"}, {"le", "<="}, {"<=", "<="},
                                                            {"gt", ">"}, {"greaterthan", ">"}, {">", ">"}, {"ge", ">="}, {">=", ">="}};
  for (auto& [alias, op] : ops)
    if (name == alias) return compare(e, op, v, other());
  error(e, "the test '" + name + "' is not implemented");
}

}  // namespace jinja
}  // namespace radix
