#pragma once
// Internals of the chat-template Jinja interpreter (src/io/chat_template.cpp, jinja_*.cpp): limits,
// Python-like values, UTF-8 helpers, the source, the AST and the evaluator's interface.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "radix/error.h"

namespace radix {
namespace jinja {

constexpr int kMaxNesting = 96;                  // nested expressions/blocks the parser accepts
constexpr int kMaxNodeDepth = 256;               // depth of any expression tree (a+b+c+... chains)
constexpr int kMaxCallDepth = 64;                // macro calls in progress
constexpr int64_t kMaxSteps = 1'000'000;         // evaluation steps per render, plus kStepsPerMessage per message
constexpr int64_t kStepsPerMessage = 1'000;
constexpr size_t kMaxString = 32u << 20;         // any string or the output
constexpr int64_t kMaxRange = 100'000;           // jinja2's sandbox MAX_RANGE
constexpr int kMaxValueDepth = 100;              // lists and dicts inside each other
constexpr int kMaxEvalDepth = 400;               // evaluation recursion (expressions x macro calls); ASan frames are large

[[noreturn]] void fail(const std::string& what);

// ---------------------------------------------------------------------------------------------
// UTF-8 and Python string helpers (jinja_values.cpp)

// Decodes one code point at s[i] (an invalid byte is one code point of its own value).
uint32_t decodeAt(std::string_view s, size_t& i);
// Code point boundaries of s (offsets of each code point, then s.size()).
std::vector<size_t> codePoints(std::string_view s);
size_t codePointCount(std::string_view s);
// Python's str.isspace().
bool isPySpace(uint32_t c);
// Python's str.strip/lstrip/rstrip: `chars` null means whitespace.
std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right);
std::string asciiUpper(std::string s);
std::string asciiLower(std::string s);

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

bool isAsciiAlpha(char c);
bool isDigit(char c);

// ---------------------------------------------------------------------------------------------
// Values (jinja_values.cpp)

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

struct Interp;
struct FuncObj {
  std::string name;
  std::function<Value(Interp&, std::vector<Value>&, Kwargs&)> call;
};

std::string typeName(const Value& v);
[[noreturn]] void failUndefined(const Value& v);
bool truthy(const Value& v);
bool equal(const Value& a, const Value& b);
std::string reprString(std::string_view s);
// Python's str().
std::string str(const Value& v);
std::string repr(const Value& v);

// json.dumps(x, ensure_ascii=False, indent, separators, sort_keys), as transformers' tojson.
struct JsonStyle {
  std::optional<std::string> indent;
  std::string itemSep = ", ", keySep = ": ";
  bool sortKeys = false;
};
void toJson(std::string& out, const Value& v, const JsonStyle& style, int level);

// ---------------------------------------------------------------------------------------------
// Source and AST (jinja_parse.cpp parses; chat_template.cpp evaluates)

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

const std::unordered_set<std::string_view>& knownFilters();
const std::unordered_set<std::string_view>& knownTests();

// Lexes and parses a template (the source normalized) to its AST.
Body parseTemplate(const Source& src);

// ---------------------------------------------------------------------------------------------
// Evaluator (chat_template.cpp; methods, filters and tests in jinja_filters.cpp)

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
  Flow exec(const Body& body, Frame& frame);
  Flow exec(const Stmt& s, Frame& frame);
  bool holdsObject(const Value& v);
  void assign(const Stmt& s, Frame& frame, Value v, const Expr& where);
  Flow execFor(const Stmt& s, Frame& frame);
  Value makeMacro(const Stmt& s);

  // ---- iteration
  std::vector<Value> iterate(const Value& v, const Expr& where);

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
  Value eval(const Expr& e, Frame& frame);
  static Value boundMethod(const Value& self, const std::string& name);
  static bool isMethod(const Value& v, std::string_view name);
  Value getAttr(const Value& obj, const std::string& name, const Expr& e);
  Value getItem(const Value& obj, const Value& key, const Expr& e);
  Value slice(const Expr& e, Frame& frame);
  void evalArgs(const Expr& e, size_t first, Frame& frame, std::vector<Value>& args, Kwargs& kwargs);
  Value call(const Expr& e, Frame& frame);
  Value invoke(const Value& fn, std::vector<Value>& args, Kwargs& kwargs, const Expr& e);

  // ---- str, list and dict methods (jinja_filters.cpp)
  static const Value* arg(std::vector<Value>& args, Kwargs& kwargs, size_t index, std::string_view name);
  static const std::string& needString(const Value* v, const char* what);
  Value method(const Value& self, const std::string& name, std::vector<Value>& args, Kwargs& kwargs, const Expr* where);
  static const Expr& dummyExpr();
  static std::string replaceAll(const std::string& s, const std::string& from, const std::string& to, int64_t count);

  // ---- operators
  Value binary(const Expr& e, const Value& a, const Value& b);
  bool contains(const Expr& e, const Value& needle, const Value& hay);
  int order(const Expr& e, const std::string& op, const Value& a, const Value& b);
  bool compare(const Expr& e, const std::string& op, const Value& a, const Value& b);

  // ---- filters (jinja_filters.cpp)
  Value filter(const Expr& e, Frame& frame);
  static int64_t needInt(const Value* v, const char* what);
  Value getPath(const Value& item, const std::string& path, const Expr& e);
  Value applyFilter(const Expr& e, const std::string& name, Value v, std::vector<Value>& args, Kwargs& kwargs, Frame& frame);
  static const Expr& plusExpr(const Expr& where);

  // ---- tests (jinja_filters.cpp)
  bool test(const Expr& e, Frame& frame);
  bool applyTest(const Expr& e, const std::string& name, const Value& v, const std::vector<Value>& args);
};

}  // namespace jinja
}  // namespace radix
