// The chat-template interpreter's values (src/io/jinja.h): UTF-8 and Python string helpers,
// Python-like values with their str(), repr() and equality, and tojson's JSON writer.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "io/jinja.h"

namespace radix {
namespace jinja {

[[noreturn]] void fail(const std::string& what) { throw Error("[chat_template] " + what); }

// ---------------------------------------------------------------------------------------------
// UTF-8 and Python string helpers

// Decodes one code point at s[i] (an invalid byte is one code point of its own value).
uint32_t decodeAt(std::string_view s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
  if (n <= 0 || i + n >= s.size()) {
    ++i;
    return c;
  }
  uint32_t cp = c & (0x3F >> n);
  for (int k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return c;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += n + 1;
  return cp;
}

// Code point boundaries of s (offsets of each code point, then s.size()).
std::vector<size_t> codePoints(std::string_view s) {
  std::vector<size_t> at;
  for (size_t i = 0; i < s.size();) {
    at.push_back(i);
    decodeAt(s, i);
  }
  at.push_back(s.size());
  return at;
}

size_t codePointCount(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) decodeAt(s, i);
  return n;
}

// Python's str.isspace().
bool isPySpace(uint32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.strip/lstrip/rstrip: `chars` null means whitespace.
std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars)
    for (size_t i = 0; i < chars->size();) set.push_back(decodeAt(*chars, i));
  const auto strip = [&](uint32_t c) { return chars ? std::find(set.begin(), set.end(), c) != set.end() : isPySpace(c); };
  size_t begin = 0, end = s.size();
  if (left)
    while (begin < end) {
      size_t next = begin;
      if (!strip(decodeAt(s, next))) break;
      begin = next;
    }
  if (right)
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && end - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      size_t after = start;
      uint32_t c = decodeAt(s, after);
      if (after != end) start = end - 1, c = static_cast<unsigned char>(s[end - 1]);  // an invalid tail byte
      if (!strip(c)) break;
      end = start;
    }
  return std::string(s.substr(begin, end - begin));
}

std::string asciiUpper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return s;
}

std::string asciiLower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return s;
}

bool isAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

namespace {

// Python's repr of a float (shortest round trip; exponent form outside [1e-4, 1e16)).
std::string pyFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  std::string sign;
  if (mantissa[0] == '-') sign = "-", mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(-exp - 1, '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
    return sign + out;
  }
  std::string out = digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return sign + out + ebuf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Values

int depthOf(const Value& v) { return v.kind == Kind::list ? v.list->depth : (v.kind == Kind::dict || v.kind == Kind::ns) ? v.dict->depth : 0; }

Value Value::makeList(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind = Kind::list;
  v.list = std::make_shared<ListObj>();
  for (const Value& item : items) v.list->depth = std::max(v.list->depth, 1 + depthOf(item));
  if (v.list->depth > kMaxValueDepth) fail("values nested deeper than " + std::to_string(kMaxValueDepth));
  v.list->items = std::move(items);
  v.list->tuple = tuple;
  return v;
}

Value Value::makeDict() {
  Value v;
  v.kind = Kind::dict;
  v.dict = std::make_shared<DictObj>();
  return v;
}

std::string typeName(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::real: return "float";
    case Kind::string: return "str";
    case Kind::list: return v.list->tuple ? "tuple" : "list";
    case Kind::dict: return "dict";
    case Kind::ns: return "Namespace";
    case Kind::func: return "function";
  }
  return "?";
}

[[noreturn]] void failUndefined(const Value& v) {
  fail(v.s.empty() ? std::string("a value is undefined") : "'" + v.s + "' is undefined");
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return v.b;
    case Kind::integer: return v.i != 0;
    case Kind::real: return v.d != 0;
    case Kind::string: return !v.s.empty();
    case Kind::list: return !v.list->items.empty();
    case Kind::dict: return !v.dict->items.empty();
    case Kind::ns:
    case Kind::func: return true;
  }
  return false;
}

Value* DictObj::find(const Value& key) {
  for (auto& [k, v] : items)
    if (equal(k, key)) return &v;
  return nullptr;
}

bool equal(const Value& a, const Value& b) {
  if (a.isNumber() && b.isNumber()) {
    if (a.kind != Kind::real && b.kind != Kind::real) return a.intOf() == b.intOf();
    return a.num() == b.num();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::undefined:
    case Kind::none: return true;
    case Kind::string: return a.s == b.s;
    case Kind::list: {
      if (a.list->tuple != b.list->tuple || a.list->items.size() != b.list->items.size()) return false;
      for (size_t k = 0; k < a.list->items.size(); ++k)
        if (!equal(a.list->items[k], b.list->items[k])) return false;
      return true;
    }
    case Kind::dict: {
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (auto& [k, v] : a.dict->items) {
        const Value* other = b.dict->find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    }
    default: return a.dict == b.dict && a.fn == b.fn;
  }
}

std::string reprString(std::string_view s) {
  const bool dq = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const uint32_t c = decodeAt(s, i);
    char buf[16];
    if (c == static_cast<uint32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x2064) ||
               c == 0x3000 || c == 0xFEFF) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  out += q;
  return out;
}

// Python's str().
std::string str(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return "";
    case Kind::none: return "None";
    case Kind::boolean: return v.b ? "True" : "False";
    case Kind::integer: return std::to_string(v.i);
    case Kind::real: return pyFloat(v.d);
    case Kind::string: return v.s;
    default: return repr(v);
  }
}

std::string repr(const Value& v) {
  switch (v.kind) {
    case Kind::string: return reprString(v.s);
    case Kind::undefined: return "Undefined";
    case Kind::list: {
      std::string out = v.list->tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->items.size(); ++k) {
        if (k) out += ", ";
        out += repr(v.list->items[k]);
        if (out.size() > kMaxString) fail("a value is too long to print");
      }
      if (v.list->tuple && v.list->items.size() == 1) out += ",";
      return out + (v.list->tuple ? ")" : "]");
    }
    case Kind::dict:
    case Kind::ns: {
      std::string out = v.kind == Kind::ns ? "<Namespace {" : "{";
      bool first = true;
      for (auto& [k, x] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += repr(k) + ": " + repr(x);
        if (out.size() > kMaxString) fail("a value is too long to print");
      }
      return out + (v.kind == Kind::ns ? "}>" : "}");
    }
    case Kind::func: return "<function " + v.fn->name + ">";
    default: return str(v);
  }
}

namespace {

void jsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

}  // namespace

void toJson(std::string& out, const Value& v, const JsonStyle& style, int level) {
  if (level > kMaxNodeDepth) fail("tojson: a value is nested too deeply");
  if (out.size() > kMaxString) fail("tojson: the text is longer than " + std::to_string(kMaxString) + " bytes");
  const auto newline = [&](int at) {
    if (!style.indent) return;
    out += '\n';
    for (int k = 0; k < at; ++k) out += *style.indent;
  };
  switch (v.kind) {
    case Kind::none: out += "null"; return;
    case Kind::boolean: out += v.b ? "true" : "false"; return;
    case Kind::integer: out += std::to_string(v.i); return;
    case Kind::real:
      out += std::isnan(v.d) ? "NaN" : std::isinf(v.d) ? (v.d < 0 ? "-Infinity" : "Infinity") : pyFloat(v.d);
      return;
    case Kind::string: jsonString(out, v.s); return;
    case Kind::list: {
      if (v.list->items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < v.list->items.size(); ++k) {
        if (k) out += style.itemSep;
        newline(level + 1);
        toJson(out, v.list->items[k], style, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Kind::dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> items;
      for (auto& [k, x] : v.dict->items) {
        std::string key;
        if (k.kind == Kind::string) key = k.s;
        else if (k.kind == Kind::boolean) key = k.b ? "true" : "false";
        else if (k.kind == Kind::none) key = "null";
        else if (k.kind == Kind::integer || k.kind == Kind::real) key = str(k);
        else fail("tojson: keys must be str, int, float, bool or None, not " + typeName(k));
        items.emplace_back(std::move(key), &x);
      }
      if (style.sortKeys)
        stableSort(items, [](auto& a, auto& b) { return a.first < b.first; });
      out += '{';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += style.itemSep;
        newline(level + 1);
        jsonString(out, items[k].first);
        out += style.keySep;
        toJson(out, *items[k].second, style, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: fail("tojson: Object of type " + typeName(v) + " is not JSON serializable");
  }
}

}  // namespace jinja
}  // namespace radix
