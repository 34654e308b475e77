// The chat-template interpreter's front end (src/io/jinja.h): a lexer with jinja2's whitespace
// rules (trim_blocks, lstrip_blocks, `-`/`+` markers) and a parser to the AST.
#include <charconv>
#include <cstdlib>

#include "io/jinja.h"
#include "io/tokenizer_internal.h"

namespace radix {
namespace jinja {

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

namespace {

using tok::appendUtf8;

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

bool isNameStart(char c) { return isAsciiAlpha(c) || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }

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
// Parser

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

}  // namespace

Body parseTemplate(const Source& src) {
  Parser parser(src, lex(src));
  return parser.parseTemplate();
}

}  // namespace jinja
}  // namespace radix
