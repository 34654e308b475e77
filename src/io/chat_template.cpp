// A small Jinja interpreter for chat templates (include/radix/chat.h): a lexer with jinja2's
// whitespace rules (trim_blocks, lstrip_blocks, `-`/`+` markers), a parser to an AST, and an
// evaluator over Python-like values, rendering as transformers' ImmutableSandboxedEnvironment does.
// Templates come from model files, so every limit (nesting, steps, output) is an error, never a crash.
#include "radix/chat.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "io/tokenizer_internal.h"
#include "radix/io.h"

namespace radix {
namespace {

using tok::appendUtf8;

constexpr int kMaxNesting = 96;                  // nested expressions/blocks the parser accepts
constexpr int kMaxNodeDepth = 256;               // depth of any expression tree (a+b+c+... chains)
constexpr int kMaxCallDepth = 64;                // macro calls in progress
constexpr int64_t kMaxSteps = 1'000'000;         // evaluation steps per render, plus kStepsPerMessage per message
constexpr int64_t kStepsPerMessage = 1'000;
constexpr size_t kMaxString = 32u << 20;         // any string or the output
constexpr int64_t kMaxRange = 100'000;           // jinja2's sandbox MAX_RANGE
constexpr int kMaxValueDepth = 100;              // lists and dicts inside each other
constexpr int kMaxEvalDepth = 400;               // evaluation recursion (expressions x macro calls); ASan frames are large

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

// A merge sort (stable, and safe with any comparator, e.g. NaNs that are not a strict weak order).
template <class T, class Less>
void stableSort(std::vector<T>& v, Less less) {
  std::vector<T> tmp(v.size());
  for (size_t width = 1; width < v.size(); width *= 2) {
    for (size_t lo = 0; lo < v.size(); lo += 2 * width) {
      const size_t mid = std::min(lo + width, v.size()), hi = std::min(lo + 2 * width, v.size());
      size_t a = lo, b = mid, k = lo;
      while (a < mid && b < hi) tmp[k++] = less(v[b], v[a]) ? v[b++] : v[a++];
      while (a < mid) tmp[k++] = v[a++];
      while (b < hi) tmp[k++] = v[b++];
    }
    v.swap(tmp);
  }
}

bool isAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

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

// ---------------------------------------------------------------------------------------------
// Values

struct Value;
struct ListObj;
struct DictObj;
struct FuncObj;
using Kwargs = std::vector<std::pair<std::string, Value>>;

enum class Kind : uint8_t { undefined, none, boolean, integer, real, string, list, dict, ns, func };

struct Value {
  Kind kind = Kind::undefined;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;  // a string, or the name of an undefined value (for messages)
  std::shared_ptr<ListObj> list;
  std::shared_ptr<DictObj> dict;  // dict or namespace
  std::shared_ptr<FuncObj> fn;

  static Value undefined(std::string name) {
    Value v;
    v.s = std::move(name);
    return v;
  }
  static Value none() {
    Value v;
    v.kind = Kind::none;
    return v;
  }
  static Value boolean(bool x) {
    Value v;
    v.kind = Kind::boolean;
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v;
    v.kind = Kind::integer;
    v.i = x;
    return v;
  }
  static Value real(double x) {
    Value v;
    v.kind = Kind::real;
    v.d = x;
    return v;
  }
  static Value string(std::string x) {
    if (x.size() > kMaxString) fail("a string is longer than " + std::to_string(kMaxString) + " bytes");
    Value v;
    v.kind = Kind::string;
    v.s = std::move(x);
    return v;
  }
  static Value makeList(std::vector<Value> items, bool tuple = false);
  static Value makeDict();
  bool isNumber() const { return kind == Kind::boolean || kind == Kind::integer || kind == Kind::real; }
  double num() const { return kind == Kind::real ? d : kind == Kind::integer ? static_cast<double>(i) : b; }
  int64_t intOf() const { return kind == Kind::integer ? i : b; }
};

struct ListObj {
  std::vector<Value> items;
  bool tuple = false;
  int depth = 1;
};

int depthOf(const Value& v);

struct DictObj {
  std::vector<std::pair<Value, Value>> items;
  Value* find(const Value& key);
  Value* find(std::string_view key) {
    for (auto& [k, v] : items)
      if (k.kind == Kind::string && k.s == key) return &v;
    return nullptr;
  }
  int depth = 1;
  void set(Value key, Value value) {
    const int inner = 1 + std::max(depthOf(key), depthOf(value));
    if (inner > kMaxValueDepth) fail("values nested deeper than " + std::to_string(kMaxValueDepth));
    depth = std::max(depth, inner);
    if (Value* v = find(key)) *v = std::move(value);
    else items.emplace_back(std::move(key), std::move(value));
  }
};

int depthOf(const Value& v) { return v.kind == Kind::list ? v.list->depth : (v.kind == Kind::dict || v.kind == Kind::ns) ? v.dict->depth : 0; }

struct Interp;
struct FuncObj {
  std::string name;
  std::function<Value(Interp&, std::vector<Value>&, Kwargs&)> call;
};

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

bool equal(const Value& a, const Value& b);

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

std::string repr(const Value& v);

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

// json.dumps(x, ensure_ascii=False, indent, separators, sort_keys), as transformers' tojson.
struct JsonStyle {
  std::optional<std::string> indent;
  std::string itemSep = ", ", keySep = ": ";
  bool sortKeys = false;
};

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

// ---------------------------------------------------------------------------------------------
// Lexer

enum class Tok : uint8_t { data, varBegin, varEnd, blockBegin, blockEnd, name, string, integer, real, op, eof };

struct Token {
  Tok type;
  std::string text;  // data, name, operator, or the decoded string literal
  size_t offset;     // in the normalized source
  int64_t i = 0;
  double d = 0;
};

struct Source {
  std::string text;
  std::vector<size_t> lineStarts;
  explicit Source(std::string_view raw) {
    text.reserve(raw.size());
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '\r') {
        text += '\n';
        if (k + 1 < raw.size() && raw[k + 1] == '\n') ++k;
      } else {
        text += raw[k];
      }
    }
    if (!text.empty() && text.back() == '\n') text.pop_back();  // keep_trailing_newline=False
    lineStarts.push_back(0);
    for (size_t k = 0; k < text.size(); ++k)
      if (text[k] == '\n') lineStarts.push_back(k + 1);
  }
  std::string where(size_t offset) const {
    const auto it = std::upper_bound(lineStarts.begin(), lineStarts.end(), offset);
    const size_t line = it - lineStarts.begin();
    return "line " + std::to_string(line) + ", column " + std::to_string(offset - lineStarts[line - 1] + 1);
  }
  // The text of a construct for messages: from offset to the end of the tag or line, cut at 40 bytes.
  std::string snippet(size_t offset) const {
    std::string out;
    for (size_t k = offset; k < text.size() && out.size() < 40 && text[k] != '\n'; ++k) {
      out += text[k];
      if (out.size() >= 2 && (out.ends_with("%}") || out.ends_with("}}"))) break;
    }
    return out;
  }
  [[noreturn]] void error(const std::string& what, size_t offset, const std::string& construct) const {
    fail(what + " at " + where(offset) + ": " + construct);
  }
};

bool isNameStart(char c) { return isAsciiAlpha(c) || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Python's unicode-escape decoding of a string literal's body (unknown escapes stay as written).
std::string unescape(std::string_view body) {
  std::string out;
  for (size_t k = 0; k < body.size(); ++k) {
    if (body[k] != '\\' || k + 1 >= body.size()) {
      out += body[k];
      continue;
    }
    const char e = body[++k];
    const auto hex = [&](size_t n) -> std::optional<uint32_t> {
      if (k + n >= body.size()) return std::nullopt;
      uint32_t cp = 0;
      for (size_t j = 1; j <= n; ++j) {
        const char h = body[k + j];
        int digit = isDigit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
        if (digit < 0) return std::nullopt;
        cp = cp * 16 + digit;
      }
      return cp;
    };
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\n': break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        const auto cp = hex(n);
        if (!cp || *cp > 0x10FFFF) fail("a string literal has a malformed \\" + std::string(1, e) + " escape");
        appendUtf8(out, *cp);
        k += n;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = e - '0';
          for (int j = 0; j < 2 && k + 1 < body.size() && body[k + 1] >= '0' && body[k + 1] <= '7'; ++j) cp = cp * 8 + (body[++k] - '0');
          appendUtf8(out, cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

std::vector<Token> lex(const Source& src) {
  const std::string& s = src.text;
  std::vector<Token> out;
  size_t pos = 0;
  bool lineStarting = true;
  const auto skipSpace = [&](size_t& p) {
    while (p < s.size()) {
      size_t q = p;
      if (!isPySpace(decodeAt(s, q))) break;
      p = q;
    }
  };
  while (pos < s.size()) {
    size_t k = pos;
    while (true) {
      k = s.find('{', k);
      if (k == std::string::npos || k + 1 >= s.size()) {
        k = std::string::npos;
        break;
      }
      if (s[k + 1] == '{' || s[k + 1] == '%' || s[k + 1] == '#') break;
      ++k;
    }
    if (k == std::string::npos) {
      out.push_back({Tok::data, s.substr(pos), pos});
      break;
    }
    std::string text = s.substr(pos, k - pos);
    const char kind = s[k + 1];
    const char sign = k + 2 < s.size() && (s[k + 2] == '-' || s[k + 2] == '+') ? s[k + 2] : 0;
    if (sign == '-') {
      text = pyStrip(text, nullptr, false, true);
    } else if (sign != '+' && kind != '{') {  // lstrip_blocks
      const size_t lpos = text.rfind('\n') + 1;
      if (lpos > 0 || lineStarting) {
        bool blank = lpos < text.size();
        for (size_t q = lpos; q < text.size() && blank;) blank = isPySpace(decodeAt(text, q));
        if (blank) text.resize(lpos);
      }
    }
    if (!text.empty()) out.push_back({Tok::data, std::move(text), pos});
    size_t p = k + 2 + (sign ? 1 : 0);
    if (kind == '#') {
      const size_t end = s.find("#}", p);
      if (end == std::string::npos) src.error("unclosed comment", k, src.snippet(k));
      size_t after = end + 2;
      if (end > p && s[end - 1] == '-') skipSpace(after);
      else if (!(end > p && s[end - 1] == '+') && after < s.size() && s[after] == '\n') ++after;  // trim_blocks
      lineStarting = s[after - 1] == '\n';
      pos = after;
      continue;
    }
    const bool block = kind == '%';
    out.push_back({block ? Tok::blockBegin : Tok::varBegin, block ? "{%" : "{{", k});
    int balance = 0;
    while (true) {
      skipSpace(p);
      if (p >= s.size()) src.error(block ? "unclosed tag" : "unclosed expression", k, src.snippet(k));
      const std::string_view rest(s.data() + p, s.size() - p);
      const std::string_view close = block ? "%}" : "}}";
      if (balance == 0) {
        size_t after = 0;
        if (rest.starts_with("-") && rest.substr(1).starts_with(close)) {
          after = p + 3;
          skipSpace(after);
        } else if (block && rest.starts_with("+%}")) {
          after = p + 3;
        } else if (rest.starts_with(close)) {
          after = p + 2;
          if (block && after < s.size() && s[after] == '\n') ++after;  // trim_blocks
        }
        if (after) {
          out.push_back({block ? Tok::blockEnd : Tok::varEnd, std::string(close), p});
          lineStarting = s[after - 1] == '\n';
          pos = after;
          break;
        }
      }
      const char c = s[p];
      if (c == '\'' || c == '"') {
        size_t q = p + 1;
        while (q < s.size() && s[q] != c) q += s[q] == '\\' ? 2 : 1;
        if (q >= s.size()) src.error("unterminated string", p, src.snippet(p));
        out.push_back({Tok::string, unescape(std::string_view(s).substr(p + 1, q - p - 1)), p});
        p = q + 1;
      } else if (isDigit(c)) {
        size_t q = p;
        const auto digits = [&] {
          const size_t start = q;
          while (q < s.size() && (isDigit(s[q]) || (s[q] == '_' && q + 1 < s.size() && isDigit(s[q + 1]) && q > start))) ++q;
          return q > start;
        };
        digits();
        bool isReal = false;
        const bool afterDot = p > 0 && s[p - 1] == '.';
        if (!afterDot && q + 1 < s.size() && s[q] == '.' && isDigit(s[q + 1])) {
          ++q;
          digits();
          isReal = true;
        }
        if (!afterDot && q < s.size() && (s[q] == 'e' || s[q] == 'E')) {
          size_t save = q++;
          if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
          if (digits()) isReal = true;
          else q = save;
        }
        std::string digitsText;
        for (size_t j = p; j < q; ++j)
          if (s[j] != '_') digitsText += s[j];
        Token t{isReal ? Tok::real : Tok::integer, digitsText, p};
        if (isReal) {
          t.d = std::strtod(digitsText.c_str(), nullptr);
        } else {
          auto [ptr, ec] = std::from_chars(digitsText.data(), digitsText.data() + digitsText.size(), t.i);
          if (ec != std::errc()) src.error("integer literal out of range", p, digitsText);
        }
        out.push_back(std::move(t));
        p = q;
      } else if (isNameStart(c)) {
        size_t q = p;
        while (q < s.size() && isNameChar(s[q])) ++q;
        out.push_back({Tok::name, s.substr(p, q - p), p});
        p = q;
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")",
                                           "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
        const char* found = nullptr;
        for (const char* op : kOps)
          if (rest.starts_with(op)) {
            found = op;
            break;
          }
        if (!found) src.error("unexpected character", p, std::string(1, c));
        const std::string op = found;
        if (op == "(" || op == "[" || op == "{") ++balance;
        else if (op == ")" || op == "]" || op == "}") --balance;
        if (balance < 0) src.error("unbalanced " + op, p, op);
        out.push_back({Tok::op, op, p});
        p += op.size();
      }
    }
  }
  out.push_back({Tok::eof, "", s.size()});
  return out;
}

// ---------------------------------------------------------------------------------------------
// AST

enum class Ex : uint8_t { literal, name, list, tuple, dict, attr, item, slice, call, filter, test, notOp, neg, pos, binary, andOp, orOp, compare, cond };

struct Expr {
  Ex kind = Ex::literal;
  size_t offset = 0;
  int depth = 1;
  Value literal;
  std::string name;                        // name, attribute, filter, test, binary operator
  std::vector<std::unique_ptr<Expr>> kids; // operands; may hold nullptr (slice bounds, cond without else)
  std::vector<std::string> kwNames;        // the names of the last kwNames.size() kids (call/filter/test)
  std::vector<std::string> ops;            // compare operators
  bool negated = false;                    // is not
};
using ExprPtr = std::unique_ptr<Expr>;

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

enum class St : uint8_t { text, output, ifs, fors, set, setBlock, macro, brk, cont, generation };

struct Stmt {
  St kind = St::text;
  size_t offset = 0;
  std::string text;                 // text; macro or set name
  ExprPtr expr;                     // output, for iterable, set value
  ExprPtr filter;                   // for ... if
  ExprPtr nsTarget;                 // set ns.attr: the namespace expression
  std::vector<std::string> names;   // for / set targets; macro params
  std::vector<ExprPtr> conds;       // if/elif conditions (else: nullptr); macro defaults
  std::vector<Body> bodies;         // if branches; for: body, else
  bool unpack = false;              // targets written as a tuple
};

const std::unordered_set<std::string_view>& knownFilters() {
  static const std::unordered_set<std::string_view> names = {
      "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "e", "escape", "first", "float", "indent", "int", "items",
      "join", "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr", "replace", "reverse", "round",
      "safe", "select", "selectattr", "sort", "string", "sum", "title", "tojson", "trim", "unique", "upper", "wordcount"};
  return names;
}

const std::unordered_set<std::string_view>& knownTests() {
  static const std::unordered_set<std::string_view> names = {
      "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "==", "escaped", "even", "false", "filter", "float", "ge",
      "gt", "greaterthan", "in", "integer", "iterable", "le", "lower", "lt", "lessthan", "mapping", "ne", "!=", "none", "number",
      "odd", "sameas", "sequence", "string", "test", "true", "undefined", "upper", ">=", ">", "<=", "<"};
  return names;
}

class Parser {
 public:
  Parser(const Source& src, std::vector<Token> tokens) : src_(src), t_(std::move(tokens)) {}

  Body parseTemplate() {
    Body body = parseBody({}, 0, "");
    return body;
  }

 private:
  const Source& src_;
  std::vector<Token> t_;
  size_t p_ = 0;
  int nesting_ = 0;

  struct Nest {
    Parser& p;
    Nest(Parser& parser, size_t offset) : p(parser) {
      if (++p.nesting_ > kMaxNesting) p.src_.error("nesting deeper than " + std::to_string(kMaxNesting), offset, p.src_.snippet(offset));
    }
    ~Nest() { --p.nesting_; }
  };

  const Token& cur() const { return t_[p_]; }
  const Token& peek(size_t n = 1) const { return t_[std::min(p_ + n, t_.size() - 1)]; }
  bool isOp(std::string_view op) const { return cur().type == Tok::op && cur().text == op; }
  bool isName(std::string_view name) const { return cur().type == Tok::name && cur().text == name; }
  [[noreturn]] void unexpected(const char* what) const {
    const Token& t = cur();
    const std::string shown = t.type == Tok::eof ? "end of template" : t.type == Tok::blockEnd ? "%}" : t.type == Tok::varEnd ? "}}"
                              : t.type == Tok::string ? reprString(t.text) : t.text;
    src_.error(std::string("expected ") + what, t.offset, shown);
  }
  void expectOp(const char* op) {
    if (!isOp(op)) unexpected((std::string("'") + op + "'").c_str());
    ++p_;
  }
  std::string expectName() {
    if (cur().type != Tok::name) unexpected("a name");
    return t_[p_++].text;
  }
  void expectBlockEnd() {
    if (cur().type != Tok::blockEnd) unexpected("%}");
    ++p_;
  }

  ExprPtr node(Ex kind, size_t offset, std::vector<ExprPtr> kids = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->offset = offset;
    for (auto& k : kids)
      if (k) e->depth = std::max(e->depth, k->depth + 1);
    if (e->depth > kMaxNodeDepth) src_.error("expression nested deeper than " + std::to_string(kMaxNodeDepth), offset, src_.snippet(offset));
    e->kids = std::move(kids);
    return e;
  }
  static std::vector<ExprPtr> two(ExprPtr a, ExprPtr b) {
    std::vector<ExprPtr> v;
    v.push_back(std::move(a));
    v.push_back(std::move(b));
    return v;
  }
  static std::vector<ExprPtr> one(ExprPtr a) {
    std::vector<ExprPtr> v;
    v.push_back(std::move(a));
    return v;
  }

  // Statements up to a `{% name %}` with name in `ends` (left unconsumed, at the name).
  Body parseBody(const std::vector<std::string_view>& ends, size_t openOffset, const std::string& opener) {
    Nest nest(*this, cur().offset);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::eof) {
        if (!ends.empty()) src_.error("unclosed block", openOffset, opener);
        return body;
      }
      if (t.type == Tok::data) {
        auto s = std::make_unique<Stmt>();
        s->kind = St::text;
        s->offset = t.offset;
        s->text = t.text;
        body.push_back(std::move(s));
        ++p_;
      } else if (t.type == Tok::varBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = St::output;
        s->offset = t.offset;
        ++p_;
        s->expr = parseTuple(true);
        if (cur().type != Tok::varEnd) unexpected("}}");
        ++p_;
        body.push_back(std::move(s));
      } else if (t.type == Tok::blockBegin) {
        const Token& nameTok = peek();
        if (nameTok.type == Tok::name && std::find(ends.begin(), ends.end(), nameTok.text) != ends.end()) {
          ++p_;
          return body;
        }
        body.push_back(parseStatement());
      } else {
        unexpected("text or a tag");
      }
    }
  }

  std::unique_ptr<Stmt> parseStatement() {
    const size_t begin = cur().offset;
    ++p_;  // {%
    if (cur().type != Tok::name) unexpected("a tag name");
    const std::string tag = cur().text;
    const std::string opener = "{% " + tag;
    auto s = std::make_unique<Stmt>();
    s->offset = begin;
    ++p_;
    if (tag == "if") {
      s->kind = St::ifs;
      s->conds.push_back(parseTuple(false));
      expectBlockEnd();
      while (true) {
        s->bodies.push_back(parseBody({"elif", "else", "endif"}, begin, opener));
        const std::string next = expectName();
        if (next == "elif") {
          s->conds.push_back(parseTuple(false));
          expectBlockEnd();
        } else if (next == "else") {
          expectBlockEnd();
          s->conds.push_back(nullptr);
          s->bodies.push_back(parseBody({"endif"}, begin, opener));
          ++p_;
          expectBlockEnd();
          break;
        } else {
          expectBlockEnd();
          break;
        }
      }
    } else if (tag == "for") {
      s->kind = St::fors;
      parseTargets(*s);
      if (!isName("in")) unexpected("'in'");
      ++p_;
      s->expr = parseTuple(false, /*withCond=*/false);
      if (isName("if")) {
        ++p_;
        s->filter = parseExpression(true);
      }
      if (isName("recursive")) src_.error("unsupported", cur().offset, "recursive loops");
      expectBlockEnd();
      s->bodies.push_back(parseBody({"else", "endfor"}, begin, opener));
      if (expectName() == "else") {
        expectBlockEnd();
        s->bodies.push_back(parseBody({"endfor"}, begin, opener));
        ++p_;
      }
      expectBlockEnd();
    } else if (tag == "set") {
      if (cur().type == Tok::name && peek().type == Tok::op && peek().text == ".") {
        s->kind = St::set;
        auto ns = node(Ex::name, cur().offset);
        ns->name = expectName();
        s->nsTarget = std::move(ns);
        ++p_;
        s->text = expectName();
        expectOp("=");
        s->expr = parseTuple(false);
        expectBlockEnd();
      } else {
        parseTargets(*s);
        if (isOp("=")) {
          s->kind = St::set;
          ++p_;
          s->expr = parseTuple(false);
          expectBlockEnd();
        } else {
          if (s->unpack || s->names.size() != 1) unexpected("'='");
          if (isOp("|")) src_.error("unsupported", cur().offset, "filters on a set block");
          s->kind = St::setBlock;
          expectBlockEnd();
          s->bodies.push_back(parseBody({"endset"}, begin, opener));
          ++p_;
          expectBlockEnd();
        }
      }
    } else if (tag == "macro") {
      s->kind = St::macro;
      s->text = expectName();
      expectOp("(");
      while (!isOp(")")) {
        if (!s->names.empty()) expectOp(",");
        if (isOp(")")) break;
        s->names.push_back(expectName());
        if (isOp("=")) {
          ++p_;
          s->conds.push_back(parseExpression(true));
        } else {
          s->conds.push_back(nullptr);
        }
      }
      ++p_;
      expectBlockEnd();
      s->bodies.push_back(parseBody({"endmacro"}, begin, opener));
      ++p_;
      if (cur().type == Tok::name) ++p_;  // {% endmacro name %}
      expectBlockEnd();
    } else if (tag == "break" || tag == "continue") {
      s->kind = tag == "break" ? St::brk : St::cont;
      expectBlockEnd();
    } else if (tag == "generation") {  // transformers' AssistantTracker: renders its body
      s->kind = St::generation;
      expectBlockEnd();
      s->bodies.push_back(parseBody({"endgeneration"}, begin, opener));
      ++p_;
      expectBlockEnd();
    } else {
      static const std::unordered_set<std::string_view> ends = {"endif", "endfor", "elif", "else", "endset", "endmacro", "endgeneration"};
      src_.error(ends.contains(tag) ? "unexpected tag" : "unknown tag", begin, opener);
    }
    return s;
  }

  void parseTargets(Stmt& s) {
    const bool paren = isOp("(");
    if (paren) ++p_;
    s.names.push_back(expectName());
    while (isOp(",")) {
      s.unpack = true;
      ++p_;
      if (cur().type != Tok::name) break;
      s.names.push_back(expectName());
    }
    if (paren) {
      s.unpack = true;
      expectOp(")");
    }
  }

  // A comma-separated list becomes a tuple: `{{ a, b }}`, `for x in a, b`.
  ExprPtr parseTuple(bool allowEmptyEnd, bool withCond = true) {
    (void)allowEmptyEnd;
    const size_t offset = cur().offset;
    ExprPtr first = parseExpression(withCond);
    if (!isOp(",")) return first;
    std::vector<ExprPtr> items;
    items.push_back(std::move(first));
    while (isOp(",")) {
      ++p_;
      if (cur().type == Tok::blockEnd || cur().type == Tok::varEnd || isOp("=") || isName("if")) break;
      items.push_back(parseExpression(withCond));
    }
    return node(Ex::tuple, offset, std::move(items));
  }

  ExprPtr parseExpression(bool withCond) {
    Nest nest(*this, cur().offset);
    const size_t offset = cur().offset;
    ExprPtr e = parseOr();
    if (!withCond) return e;
    while (isName("if")) {
      ++p_;
      ExprPtr cond = parseOr();
      ExprPtr otherwise;
      if (isName("else")) {
        ++p_;
        otherwise = parseExpression(true);
      }
      std::vector<ExprPtr> kids;
      kids.push_back(std::move(e));
      kids.push_back(std::move(cond));
      kids.push_back(std::move(otherwise));
      e = node(Ex::cond, offset, std::move(kids));
    }
    return e;
  }

  ExprPtr parseOr() {
    ExprPtr e = parseAnd();
    while (isName("or")) {
      const size_t offset = cur().offset;
      ++p_;
      e = node(Ex::orOp, offset, two(std::move(e), parseAnd()));
    }
    return e;
  }
  ExprPtr parseAnd() {
    ExprPtr e = parseNot();
    while (isName("and")) {
      const size_t offset = cur().offset;
      ++p_;
      e = node(Ex::andOp, offset, two(std::move(e), parseNot()));
    }
    return e;
  }
  ExprPtr parseNot() {
    if (isName("not")) {
      Nest nest(*this, cur().offset);
      const size_t offset = cur().offset;
      ++p_;
      return node(Ex::notOp, offset, one(parseNot()));
    }
    return parseCompare();
  }
  ExprPtr parseCompare() {
    const size_t offset = cur().offset;
    ExprPtr first = parseMath1();
    std::vector<ExprPtr> kids;
    std::vector<std::string> ops;
    while (true) {
      std::string op;
      if (cur().type == Tok::op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
                                    cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        ++p_;
      } else if (isName("in")) {
        op = "in";
        ++p_;
      } else if (isName("not") && peek().type == Tok::name && peek().text == "in") {
        op = "not in";
        p_ += 2;
      } else {
        break;
      }
      if (kids.empty()) kids.push_back(std::move(first));
      kids.push_back(parseMath1());
      ops.push_back(op);
    }
    if (kids.empty()) return first;
    ExprPtr e = node(Ex::compare, offset, std::move(kids));
    e->ops = std::move(ops);
    return e;
  }
  ExprPtr binary(ExprPtr a, const std::string& op, size_t offset, ExprPtr b) {
    ExprPtr e = node(Ex::binary, offset, two(std::move(a), std::move(b)));
    e->name = op;
    return e;
  }
  ExprPtr parseMath1() {
    ExprPtr e = parseConcat();
    while (isOp("+") || isOp("-")) {
      const std::string op = cur().text;
      const size_t offset = cur().offset;
      ++p_;
      e = binary(std::move(e), op, offset, parseConcat());
    }
    return e;
  }
  ExprPtr parseConcat() {
    ExprPtr e = parseMath2();
    while (isOp("~")) {
      const size_t offset = cur().offset;
      ++p_;
      e = binary(std::move(e), "~", offset, parseMath2());
    }
    return e;
  }
  ExprPtr parseMath2() {
    ExprPtr e = parsePow();
    while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
      const std::string op = cur().text;
      const size_t offset = cur().offset;
      ++p_;
      e = binary(std::move(e), op, offset, parsePow());
    }
    return e;
  }
  ExprPtr parsePow() {
    ExprPtr e = parseUnary(true);
    while (isOp("**")) {
      const size_t offset = cur().offset;
      ++p_;
      e = binary(std::move(e), "**", offset, parseUnary(true));
    }
    return e;
  }
  ExprPtr parseUnary(bool withFilter) {
    Nest nest(*this, cur().offset);
    const size_t offset = cur().offset;
    ExprPtr e;
    if (isOp("-")) {
      ++p_;
      e = node(Ex::neg, offset, one(parseUnary(false)));
    } else if (isOp("+")) {
      ++p_;
      e = node(Ex::pos, offset, one(parseUnary(false)));
    } else {
      e = parsePostfix(parsePrimary());
    }
    if (withFilter) e = parseFilterExpr(std::move(e));
    return e;
  }

  ExprPtr parsePrimary() {
    Nest nest(*this, cur().offset);
    const Token& t = cur();
    const size_t offset = t.offset;
    if (t.type == Tok::name) {
      ++p_;
      if (t.text == "true" || t.text == "True") return literal(Value::boolean(true), offset);
      if (t.text == "false" || t.text == "False") return literal(Value::boolean(false), offset);
      if (t.text == "none" || t.text == "None") return literal(Value::none(), offset);
      ExprPtr e = node(Ex::name, offset);
      e->name = t.text;
      return e;
    }
    if (t.type == Tok::string) {
      std::string text;
      while (cur().type == Tok::string) text += t_[p_++].text;
      return literal(Value::string(std::move(text)), offset);
    }
    if (t.type == Tok::integer) {
      ++p_;
      return literal(Value::integer(t.i), offset);
    }
    if (t.type == Tok::real) {
      ++p_;
      return literal(Value::real(t.d), offset);
    }
    if (isOp("(")) {
      ++p_;
      if (isOp(")")) {
        ++p_;
        return node(Ex::tuple, offset);
      }
      ExprPtr first = parseExpression(true);
      if (isOp(")")) {
        ++p_;
        return first;
      }
      std::vector<ExprPtr> items;
      items.push_back(std::move(first));
      while (isOp(",")) {
        ++p_;
        if (isOp(")")) break;
        items.push_back(parseExpression(true));
      }
      expectOp(")");
      return node(Ex::tuple, offset, std::move(items));
    }
    if (isOp("[")) {
      ++p_;
      std::vector<ExprPtr> items;
      while (!isOp("]")) {
        if (!items.empty()) expectOp(",");
        if (isOp("]")) break;
        items.push_back(parseExpression(true));
      }
      ++p_;
      return node(Ex::list, offset, std::move(items));
    }
    if (isOp("{")) {
      ++p_;
      std::vector<ExprPtr> items;
      while (!isOp("}")) {
        if (!items.empty()) expectOp(",");
        if (isOp("}")) break;
        items.push_back(parseExpression(true));
        expectOp(":");
        items.push_back(parseExpression(true));
      }
      ++p_;
      return node(Ex::dict, offset, std::move(items));
    }
    unexpected("an expression");
  }

  ExprPtr literal(Value v, size_t offset) {
    ExprPtr e = node(Ex::literal, offset);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parsePostfix(ExprPtr e) {
    while (true) {
      const size_t offset = cur().offset;
      if (isOp(".")) {
        ++p_;
        if (cur().type == Tok::integer) {
          ExprPtr index = literal(Value::integer(cur().i), cur().offset);
          ++p_;
          e = node(Ex::item, offset, two(std::move(e), std::move(index)));
        } else {
          std::string name = expectName();
          e = node(Ex::attr, offset, one(std::move(e)));
          e->name = std::move(name);
        }
      } else if (isOp("[")) {
        ++p_;
        e = parseSubscript(std::move(e), offset);
      } else if (isOp("(")) {
        e = parseCall(node(Ex::call, offset, one(std::move(e))));
      } else {
        return e;
      }
    }
  }

  ExprPtr parseSubscript(ExprPtr target, size_t offset) {
    Nest nest(*this, offset);
    std::vector<ExprPtr> parts(3);
    int colons = 0;
    size_t slot = 0;
    while (!isOp("]")) {
      if (isOp(":")) {
        if (++colons > 2) unexpected("']'");
        ++p_;
        slot = colons;
        continue;
      }
      if (parts[slot]) unexpected("':' or ']'");
      parts[slot] = parseExpression(true);
      if (colons == 0 && isOp(",")) src_.error("unsupported", cur().offset, "tuple subscripts");
    }
    ++p_;
    if (colons == 0) {
      if (!parts[0]) unexpected("a subscript");
      return node(Ex::item, offset, two(std::move(target), std::move(parts[0])));
    }
    std::vector<ExprPtr> kids;
    kids.push_back(std::move(target));
    for (auto& part : parts) kids.push_back(std::move(part));
    return node(Ex::slice, offset, std::move(kids));
  }

  // `(args)` after a callee, filter or test already in e->kids.
  ExprPtr parseCall(ExprPtr e) {
    expectOp("(");
    std::vector<ExprPtr> kids = std::move(e->kids);
    bool first = true;
    while (!isOp(")")) {
      if (!first) expectOp(",");
      first = false;
      if (isOp(")")) break;
      if (isOp("*") || isOp("**")) src_.error("unsupported", cur().offset, "*args and **kwargs");
      if (cur().type == Tok::name && peek().type == Tok::op && peek().text == "=") {
        e->kwNames.push_back(cur().text);
        p_ += 2;
      } else if (!e->kwNames.empty()) {
        unexpected("a keyword argument");
      }
      kids.push_back(parseExpression(true));
    }
    ++p_;
    const Expr* raw = e.get();
    ExprPtr rebuilt = node(raw->kind, raw->offset, std::move(kids));
    rebuilt->name = std::move(e->name);
    rebuilt->kwNames = std::move(e->kwNames);
    rebuilt->negated = e->negated;
    return rebuilt;
  }

  ExprPtr parseFilterExpr(ExprPtr e) {
    while (true) {
      if (isOp("|")) {
        const size_t offset = cur().offset;
        ++p_;
        std::string name = expectName();
        while (isOp(".")) {
          ++p_;
          name += "." + expectName();
        }
        if (!knownFilters().contains(name)) src_.error("unknown filter", offset, "| " + name);
        ExprPtr f = node(Ex::filter, offset, one(std::move(e)));
        f->name = std::move(name);
        if (isOp("(")) f = parseCall(std::move(f));
        e = std::move(f);
      } else if (isName("is")) {
        const size_t offset = cur().offset;
        ++p_;
        bool negated = false;
        if (isName("not")) {
          negated = true;
          ++p_;
        }
        std::string name;
        if (cur().type == Tok::name) name = expectName();
        else if (cur().type == Tok::op && knownTests().contains(cur().text)) name = t_[p_++].text;
        else unexpected("a test name");
        if (!knownTests().contains(name)) src_.error("unknown test", offset, "is " + name);
        ExprPtr test = node(Ex::test, offset, one(std::move(e)));
        test->name = std::move(name);
        test->negated = negated;
        if (isOp("(")) {
          test = parseCall(std::move(test));
        } else if ((cur().type == Tok::name || cur().type == Tok::string || cur().type == Tok::integer || cur().type == Tok::real ||
                    isOp("[") || isOp("{")) &&
                   !isName("else") && !isName("or") && !isName("and") && !isName("if") && !isName("is") && !isName("in") &&
                   !isName("not")) {
          std::vector<ExprPtr> kids = std::move(test->kids);
          kids.push_back(parsePostfix(parsePrimary()));
          ExprPtr rebuilt = node(Ex::test, offset, std::move(kids));
          rebuilt->name = std::move(test->name);
          rebuilt->negated = negated;
          test = std::move(rebuilt);
        }
        e = std::move(test);
      } else {
        return e;
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Evaluator

Value function(std::string name, std::function<Value(Interp&, std::vector<Value>&, Kwargs&)> fn) {
  auto f = std::make_shared<FuncObj>();
  f->name = std::move(name);
  f->call = std::move(fn);
  Value v;
  v.kind = Kind::func;
  v.fn = std::move(f);
  return v;
}

struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  Frame* parent = nullptr;
  Value* find(std::string_view name) {
    for (Frame* f = this; f; f = f->parent)
      for (auto& [k, v] : f->vars)
        if (k == name) return &v;
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& [k, x] : vars)
      if (k == name) {
        x = std::move(v);
        return;
      }
    vars.emplace_back(name, std::move(v));
  }
};

enum class Flow { normal, brk, cont };

struct Interp {
  explicit Interp(const Source& source) : src(source) {}
  const Source& src;
  std::string out;
  int64_t steps = 0;
  int64_t maxSteps = kMaxSteps;
  int depth = 0;
  int calls = 0;
  Frame* root = nullptr;
  int loopDepth = 0;

  void step(int64_t n = 1) {
    steps += n;
    if (steps > maxSteps) fail("the template ran more than " + std::to_string(maxSteps) + " steps");
  }
  [[noreturn]] void error(const Expr& e, const std::string& what) { fail(what + " at " + src.where(e.offset)); }

  void emit(std::string_view text) {
    if (out.size() + text.size() > kMaxString) fail("the output is longer than " + std::to_string(kMaxString) + " bytes");
    step(static_cast<int64_t>(text.size() / 256));
    out += text;
  }

  // ---- statements
  Flow exec(const Body& body, Frame& frame) {
    for (const auto& s : body) {
      const Flow f = exec(*s, frame);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }

  Flow exec(const Stmt& s, Frame& frame) {
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
  bool holdsObject(const Value& v) {
    step();
    if (v.kind == Kind::ns || v.kind == Kind::func) return true;
    if (v.kind == Kind::list)
      return std::any_of(v.list->items.begin(), v.list->items.end(), [&](const Value& x) { return holdsObject(x); });
    if (v.kind == Kind::dict)
      return std::any_of(v.dict->items.begin(), v.dict->items.end(), [&](const auto& kv) { return holdsObject(kv.second); });
    return false;
  }

  void assign(const Stmt& s, Frame& frame, Value v, const Expr& where) {
    if (!s.unpack) {
      frame.set(s.names[0], std::move(v));
      return;
    }
    const std::vector<Value> items = iterate(v, where);
    if (items.size() != s.names.size())
      error(where, "cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(s.names.size()) + " names");
    for (size_t k = 0; k < items.size(); ++k) frame.set(s.names[k], items[k]);
  }

  Flow execFor(const Stmt& s, Frame& frame) {
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

  Value makeMacro(const Stmt& s) {
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
  std::vector<Value> iterate(const Value& v, const Expr& where) {
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
  struct Deeper {
    Interp& in;
    explicit Deeper(Interp& interp) : in(interp) {
      if (++in.depth > kMaxEvalDepth) {
        --in.depth;
        fail("evaluation nested deeper than " + std::to_string(kMaxEvalDepth) + " (recursive macros?)");
      }
    }
    ~Deeper() { --in.depth; }
  };

  Value eval(const Expr& e, Frame& frame) {
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

  static Value boundMethod(const Value& self, const std::string& name) {
    auto fn = std::make_shared<FuncObj>();
    fn->name = typeName(self) + "." + name;
    fn->call = [self, name](Interp& in, std::vector<Value>& args, Kwargs& kwargs) { return in.method(self, name, args, kwargs, nullptr); };
    Value v;
    v.kind = Kind::func;
    v.fn = std::move(fn);
    return v;
  }

  static bool isMethod(const Value& v, std::string_view name) {
    static const std::unordered_set<std::string_view> strMethods = {
        "strip", "lstrip", "rstrip", "startswith", "endswith", "split", "rsplit", "upper", "lower", "replace", "title",
        "capitalize", "find", "rfind", "count", "join", "isdigit", "isalpha", "isspace", "isupper", "islower", "isalnum", "splitlines"};
    static const std::unordered_set<std::string_view> dictMethods = {"get", "items", "keys", "values"};
    if (v.kind == Kind::string) return strMethods.contains(name);
    if (v.kind == Kind::dict) return dictMethods.contains(name);
    if (v.kind == Kind::list) return name == "index" || name == "count";
    return false;
  }

  Value getAttr(const Value& obj, const std::string& name, const Expr& e) {
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

  Value getItem(const Value& obj, const Value& key, const Expr& e) {
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

  Value slice(const Expr& e, Frame& frame) {
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

  void evalArgs(const Expr& e, size_t first, Frame& frame, std::vector<Value>& args, Kwargs& kwargs) {
    const size_t nkw = e.kwNames.size();
    const size_t npos = e.kids.size() - first - nkw;
    for (size_t k = 0; k < npos; ++k) args.push_back(eval(*e.kids[first + k], frame));
    for (size_t k = 0; k < nkw; ++k) kwargs.emplace_back(e.kwNames[k], eval(*e.kids[first + npos + k], frame));
  }

  Value call(const Expr& e, Frame& frame) {
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

  Value invoke(const Value& fn, std::vector<Value>& args, Kwargs& kwargs, const Expr& e) {
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

  static const Value* arg(std::vector<Value>& args, Kwargs& kwargs, size_t index, std::string_view name) {
    if (index < args.size()) return &args[index];
    for (auto& [k, v] : kwargs)
      if (k == name) return &v;
    return nullptr;
  }

  static const std::string& needString(const Value* v, const char* what) {
    if (!v || v->kind != Kind::string) fail(std::string(what) + " must be a string");
    return v->s;
  }

  Value method(const Value& self, const std::string& name, std::vector<Value>& args, Kwargs& kwargs, const Expr* where) {
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

  static const Expr& dummyExpr() {
    static const Expr e = [] {
      Expr x;
      x.kind = Ex::literal;
      return x;
    }();
    return e;
  }

  static std::string replaceAll(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
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

  // ---- operators
  Value binary(const Expr& e, const Value& a, const Value& b) {
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

  bool contains(const Expr& e, const Value& needle, const Value& hay) {
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
  int order(const Expr& e, const std::string& op, const Value& a, const Value& b) {
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

  bool compare(const Expr& e, const std::string& op, const Value& a, const Value& b) {
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

  // ---- filters
  Value filter(const Expr& e, Frame& frame) {
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

  static int64_t needInt(const Value* v, const char* what) {
    if (!v || (v->kind != Kind::integer && v->kind != Kind::boolean)) fail(std::string(what) + " must be an integer");
    return v->intOf();
  }

  Value getPath(const Value& item, const std::string& path, const Expr& e) {
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

  Value applyFilter(const Expr& e, const std::string& name, Value v, std::vector<Value>& args, Kwargs& kwargs, Frame& frame) {
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

  static const Expr& plusExpr(const Expr& where) {
    thread_local Expr e;
    e.kind = Ex::binary;
    e.name = "+";
    e.offset = where.offset;
    return e;
  }

  // ---- tests
  bool test(const Expr& e, Frame& frame) {
    Value v = eval(*e.kids[0], frame);
    std::vector<Value> args;
    Kwargs kwargs;
    evalArgs(e, 1, frame, args, kwargs);
    for (auto& [k, x] : kwargs) args.push_back(x);
    return applyTest(e, e.name, v, args);
  }

  bool applyTest(const Expr& e, const std::string& name, const Value& v, const std::vector<Value>& args) {
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
};

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

struct ChatTemplate::Impl {
  Source source;
  Body body;
  explicit Impl(std::string_view text) : source(text) {}
};

ChatTemplate ChatTemplate::parse(std::string_view source) {
  auto impl = std::make_shared<Impl>(source);
  Parser parser(impl->source, lex(impl->source));
  impl->body = parser.parseTemplate();
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
