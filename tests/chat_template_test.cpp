// Chat templates (src/io/chat_template.cpp) against python3-jinja2 in transformers' environment
// (tests/chat_templates/render.py): the official templates of six families x conversations, byte
// for byte, a table of Jinja snippets, error messages, limits, and chatTemplateOf on HF folders
// and GGUF files.
#include <gtest/gtest.h>

#include <radix/chat.h>
#include <radix/testing.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "io_testing.h"

namespace {

using radix::ChatContext;
using radix::ChatMessage;
using radix::ChatTemplate;
using radix::testing::errorOf;
using radix::iotest::readFile;
using radix::iotest::TempDir;
// Ordered: jinja2 must see each message's keys in Radix's order (role, content).
using json = nlohmann::ordered_json;

const std::string kTemplates = RADIX_SOURCE_DIR "/tests/chat_templates/";

bool haveJinja() { return std::system("/usr/bin/python3 -c 'import jinja2' > /dev/null 2>&1") == 0; }

// One render: a template (file name under tests/chat_templates/ or source text), messages, context.
struct Case {
  std::string label;
  std::string file;    // or
  std::string source;
  std::vector<ChatMessage> messages;
  ChatContext context;
};

json caseJson(const Case& c) {
  json j;
  if (!c.file.empty()) j["template"] = kTemplates + c.file;
  else j["source"] = c.source;
  j["messages"] = json::array();
  for (const ChatMessage& m : c.messages) j["messages"].push_back({{"role", m.role}, {"content", m.content}});
  j["context"] = {{"bos_token", c.context.bosToken}, {"eos_token", c.context.eosToken},
                  {"add_generation_prompt", c.context.addGenerationPrompt}, {"strings", c.context.strings},
                  {"flags", c.context.flags}};
  return j;
}

// python3-jinja2's renders of all cases in one process: {"text": ..} or {"error": ..} each.
json oracle(const std::vector<Case>& cases) {
  TempDir dir("chat");
  json all = json::array();
  for (const Case& c : cases) all.push_back(caseJson(c));
  const std::string in = dir.write("cases.json", all.dump());
  const std::string out = dir / "out.json";
  const std::string cmd = "/usr/bin/python3 " + kTemplates + "render.py < " + in + " > " + out + " 2> " + (dir / "err.txt");
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "render.py failed: " << readFile(dir / "err.txt");
  json result = json::parse(readFile(out), nullptr, false);
  if (result.is_discarded() || !result.is_array() || result.size() != cases.size()) {
    ADD_FAILURE() << "render.py gave no result list";
    return json::array();
  }
  return result;
}

std::string sourceOf(const Case& c) { return c.file.empty() ? c.source : readFile(kTemplates + c.file); }

// Renders every case with Radix and compares with the oracle: the same text, or both errors
// (with raise_exception's message surfaced in Radix's).
void compareAll(const std::vector<Case>& cases) {
  const json expected = oracle(cases);
  if (expected.empty()) return;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    SCOPED_TRACE(c.label);
    std::string got, error;
    try {
      got = ChatTemplate::parse(sourceOf(c)).apply(c.messages, c.context);
    } catch (const radix::Error& e) {
      error = e.what();
    }
    if (expected[k].contains("error")) {
      const std::string want = expected[k]["error"];
      EXPECT_FALSE(error.empty()) << "jinja2 failed (" << want << ") but Radix rendered:\n" << got;
      EXPECT_TRUE(error.starts_with("[chat_template] ")) << error;
      if (want.starts_with("TemplateError: ")) EXPECT_NE(error.find(want.substr(15)), std::string::npos) << error << " vs " << want;
    } else {
      EXPECT_EQ(error, "");
      EXPECT_EQ(got, expected[k]["text"].get<std::string>());
    }
  }
}

const char* const kFamilies[] = {"Qwen-Qwen2.5-7B-Instruct.jinja",         "Qwen-Qwen3-0.6B.jinja",
                                 "mistralai-Mistral-7B-Instruct-v0.1.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
                                 "google-gemma-2-2b-it.jinja",               "meta-llama-Llama-3.1-8B-Instruct.jinja"};

struct Conversation {
  const char* label;
  std::vector<ChatMessage> messages;
  std::map<std::string, std::string> strings = {};
  std::map<std::string, bool> flags = {};
};

std::vector<Conversation> conversations() {
  return {
      {"user", {{"user", "Hello!"}}},
      {"system+user", {{"system", "You are terse."}, {"user", "What is 2+2?"}}},
      {"multi-turn", {{"user", "Hi"}, {"assistant", "Hello! How can I help?"}, {"user", "Tell me a joke."}}},
      {"system multi-turn ending with assistant",
       {{"system", "Be kind."}, {"user", "Hi"}, {"assistant", "Hey."}, {"user", "Bye"}, {"assistant", "Goodbye!"}}},
      {"unicode", {{"user", "Grüße, 你好 🌍! «ça va?» — \u05e9\u05dc\u05d5\u05dd"}, {"assistant", "Très bien 👍"}, {"user", "ありがとう"}}},
      {"needs trim", {{"system", "  \n\tSystem with spaces \n "}, {"user", " \n Hello \t\n"}, {"assistant", "\n answer \n"}, {"user", "x  "}}},
      {"qwen3 thinking history",
       {{"user", "Q1"}, {"assistant", "<think>\nstep one\n</think>\n\nA1"}, {"user", "Q2"}, {"assistant", "<think>\nmore\n</think>\n\nA2"}}},
      {"qwen3 enable_thinking string", {{"user", "Hi"}}, {{"enable_thinking", "false"}}},
      {"qwen3 enable_thinking false", {{"user", "Hi"}}, {}, {{"enable_thinking", false}}},
      {"qwen3 enable_thinking true", {{"user", "Hi"}}, {}, {{"enable_thinking", true}}},
      {"llama date_string", {{"system", "sys"}, {"user", "Hi"}}, {{"date_string", "01 Jan 2025"}}},
      {"empty content", {{"user", ""}, {"assistant", ""}, {"user", "?"}}},
      {"quotes and braces", {{"user", "He said \"{{ not a tag }}\" and '{% nope %}' \\n"}}},
      {"roles out of order", {{"assistant", "first"}, {"user", "second"}}},
      {"tool role", {{"user", "weather?"}, {"tool", "{\"temp\": 20}"}, {"tool", "sunny"}}},
      {"no messages", {}},
  };
}

TEST(ChatTemplate, OfficialTemplatesMatchJinja2) {
  if (!haveJinja()) GTEST_SKIP() << "python3-jinja2 is not installed (scripts/setup installs it)";
  std::vector<Case> cases;
  for (const char* file : kFamilies)
    for (const Conversation& conv : conversations())
      for (bool prompt : {true, false}) {
        Case c;
        c.label = std::string(file) + " / " + conv.label + (prompt ? " / generation prompt" : "");
        c.file = file;
        c.messages = conv.messages;
        c.context.bosToken = "<s>";
        c.context.eosToken = "</s>";
        c.context.addGenerationPrompt = prompt;
        c.context.strings = conv.strings;
        c.context.flags = conv.flags;
        cases.push_back(std::move(c));
      }
  compareAll(cases);
}

// Jinja features one per row, each compared with jinja2 (messages: user "hi", assistant " yo ").
TEST(ChatTemplate, SnippetsMatchJinja2) {
  if (!haveJinja()) GTEST_SKIP() << "python3-jinja2 is not installed (scripts/setup installs it)";
  const char* const rows[] = {
      // whitespace: trim_blocks, lstrip_blocks, - and + markers, comments, trailing newline
      "a {# x -#}  \n  b", "a {# x #}\nb", "a\n  {#+ x #}\nb", "  {%+ if 1 %}x{% endif %}", "x\n  {% if 1 +%}\ny{% endif %}",
      "{{ 'a' }}\nb", "  {% if true %}\n    x\n  {% endif %}\nend\n", "a  {{- 'b' -}}  \n c", "\n\n{%- if 1 -%}\n\n x \n\n{%- endif -%}\n\n",
      "line\r\nnext\r\n{% if 1 %}\r\nz{% endif %}", "{% for m in messages %}\n  {{ m.role }}\n{% endfor %}\n", "t\t{% if 1 %}\tx{% endif %}",
      // scoping
      "{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = x + 1 %}{% endfor %}{{ x }}", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}",
      "{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.s = ns.s ~ m.role %}{% endfor %}{{ ns.n }}{{ ns.s }}",
      "{% set a, b = 1, 2 %}{{ a }}{{ b }}", "{% set t %}in {{ 1 + 1 }}{% endset %}[{{ t }}]",
      // loops
      "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}",
      "{% for m in messages if m.role == 'assistant' %}{{ loop.index }}:{{ m.content }}{% endfor %}", "{% for x in [] %}a{% else %}empty{% endfor %}",
      "{% for x in foo %}a{% else %}e{% endfor %}", "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}",
      "{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}",
      "{% for x in 'héllo' %}[{{ x }}]{% endfor %}", "{% for x in [1,2,3] %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}",
      "{% for m in messages[::-1] %}{{ m.role }}{% endfor %}", "{% for m in messages %}{% for c in m.content %}{{ loop.index }}{% endfor %}|{% endfor %}",
      // expressions and operators
      "{{ 1 + 2 * 3 - 4 / 8 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}",
      "{{ 'a' ~ 1 ~ none ~ true ~ 1.5 }}", "{{ 1 == 1.0 }}{{ true == 1 }}{{ 'a' < 'b' }}{{ [1, 2] < [1, 3] }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 5 }}",
      "{{ 'x' if false }}|{{ 'y' if true else 'n' }}|{{ none or 'd' }}|{{ 0 and 1 }}|{{ [] or {} }}", "{{ not 1 }}{{ not not 'a' }}{{ not(1 == 2) }}",
      "{{ 'ell' in 'hello' }}{{ 2 in [1, 2] }}{{ 'a' in {'a': 1} }}{{ 3 not in [1] }}{{ 'x' in foo }}", "{{ (1,) }}{{ () }}{{ {} }}{{ {'a': none, 'b': [1, 'x']} }}",
      "{{ [1, 'a\\n', 1.5, none, true, {'k': (1, 2)}] }}", "{{ 1e20 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ 3 / 2 }} {{ 1.0 }} {{ 1e16 }} {{ 12345678.9 }} {{ 100.0 / 3 }} {{ 1_000 }}",
      "{{ \"it's\" }}{{ [\"it's\", 'say \"x\"', 'both \\' \"'] }}", "{{ 'a\\tb\\u00e9\\x41\\101\\q' }}", "{{ 'ab' 'cd' }}{{ 'x' * 3 }}{{ 2 * 'y' }}",
      "{{ messages[0] }}", "{{ messages[0]['role'] }}{{ messages[0].content }}{{ messages[-1].content }}{{ messages.0.role }}",
      "{{ messages[5] }}|{{ none.x }}|{{ none[0] }}|{{ [1][5] }}|{{ 'abc'[1] }}{{ 'abc'[-1] }}{{ 'héllo'[1] }}",
      "{{ 'abcdef'[1:4] }}{{ 'abcdef'[::2] }}{{ 'abcdef'[::-1] }}{{ [1,2,3,4][1:] }}{{ [1,2,3,4][:-1] }}{{ [1,2,3][::-2] }}{{ [1,2,3][5:] }}{{ 'héllo'[1:3] }}",
      "{{ - 3 }}{{ +2 }}{{ -(1 - 4) }}{{ -1.5 }}",
      // filters
      "{{ '  x \\n'|trim }}|{{ 'xxaxx'|trim('x') }}|{{ messages|length }}|{{ 'héllo'|length }}|{{ {'a': 1}|length }}|{{ foo|length }}",
      "{{ 'Hello'|upper }}{{ 'Hello'|lower }}{{ 'hello world'|capitalize }}{{ 'hello wORLD-x(y'|title }}",
      "{{ x|default('d') }}{{ ''|default('e', true) }}{{ ''|default('e') }}{{ none|default('n') }}{{ foo|d('z') }}",
      "{{ [1, 2]|first }}{{ [1, 2]|last }}{{ 'abc'|first }}{{ [1, 2, 3]|join('-') }}{{ ['a', 'b']|join }}{{ messages|join(', ', attribute='role') }}",
      "{{ 'a-b-c'|replace('-', '+') }}{{ 'aaa'|replace('a', 'b', 2) }}{{ 'ab'|replace('', '.') }}{{ 1|string }}{{ [1]|string }}",
      "{{ '42'|int }}{{ '4.7'|int }}{{ 'x'|int }}{{ 'x'|int(7) }}{{ 3.9|int }}{{ true|int }}{{ '3.5'|float }}{{ ' 12 '|int }}",
      "{{ {'a': 1, 'b': [2]}|items|list }}{{ 'abc'|list }}{{ {'k': 1}|list }}{{ [3, 1, 2]|sort }}{{ [3, 1, 2]|reverse|list }}{{ 'abc'|reverse }}",
      "{{ [1, 2, 3, 4]|select('odd')|list }}{{ [1, 2, 3, 4]|reject('even')|list }}{{ messages|selectattr('role', 'equalto', 'user')|list|length }}",
      "{{ messages|rejectattr('role', 'eq', 'user')|map(attribute='content')|list }}{{ ['a', 'b']|map('upper')|list }}{{ ['x', 'code']|reject('equalto', 'code')|join(', ') }}",
      "{{ [1, 2, 3]|sum }}{{ [3, 1]|min }}{{ [3, 1]|max }}{{ ['a', 'A', 'b']|unique|list }}{{ -3|abs }}{{ 2.567|round(1) }}{{ 2.5|round }}",
      "{{ {'b': 1, 'a': 2}|dictsort }}{{ 'one two  three'|wordcount }}{{ 'a\\nb'|indent(2) }}|{{ 'a\\n\\nb'|indent(2, true) }}",
      "{{ {'a': [1, 2.5, true, none], 'é': 'x\"\\n\\t\\u0001/'}|tojson }}", "{{ {'a': [1, {'b': []}], 'c': {}}|tojson(indent=2) }}",
      "{{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}{{ [1, 2]|tojson(separators=(',', ':')) }}{{ 'x'|tojson }}{{ 1.0|tojson }}{{ none|tojson }}",
      "{{ messages|tojson }}", "{{ messages[0]|tojson(indent=4) }}",
      // tests
      "{{ foo is defined }}{{ foo is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}{{ 1 is integer }}{{ 1.0 is float }}",
      "{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is iterable }}{{ 1 is iterable }}{{ [] is sequence }}{{ true is boolean }}{{ true is true }}{{ 0 is false }}",
      "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}{{ 1 is eq 1 }}{{ 2 is gt 1 }}{{ 'a' is in 'cat' }}{{ 'ABC' is upper }}",
      "{{ messages[0].role is not none }}{{ messages[0].x is not defined }}{{ range is callable }}{{ none is sameas none }}{{ 'a' is not string }}",
      // string and dict methods
      "{{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi\\n'.lstrip('\\n') }}|{{ 'hi  '.rstrip() }}|{{ '\\u3000wide\\u00a0'.strip() }}",
      "{{ 'hello'.startswith('he') }}{{ 'hello'.endswith('lo') }}{{ 'hello'.startswith(('x', 'h')) }}{{ 'hello'.endswith('x') }}",
      "{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(' ', 1) }}{{ 'a</think>b</think>c'.split('</think>')[-1] }}{{ 'a.b.c'.rsplit('.', 1) }}",
      "{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}{{ 'aXa'.replace('a', 'b') }}{{ 'hello world'.title() }}{{ 'hELLO'.capitalize() }}{{ 'abcb'.find('b') }}{{ 'abcb'.count('b') }}",
      "{{ '-'.join(['a', 'b']) }}{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}{{ 'a\\nb'.splitlines() }}",
      "{{ messages[0].get('role') }}{{ messages[0].get('missing') }}{{ messages[0].get('missing', 'dflt') }}{{ messages[0].keys()|list }}{{ messages[0].values()|list }}",
      "{% for k, v in messages[0].items() %}{{ k }}:{{ v }};{% endfor %}{{ 'tool_calls' in messages[0] }}{{ 'role' in messages[0] }}",
      // macros, globals, generation
      "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}",
      "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}",
      "{{ range(3)|list }}{{ range(1, 7, 2)|list }}{{ range(5, 0, -2)|list }}{{ dict(a=1, b='x') }}{{ namespace(a=1).a }}",
      "{% generation %}gen {{ 1 }}{% endgeneration %}", "{{ bos_token }}{{ eos_token }}{{ add_generation_prompt }}{{ tools }}{{ documents }}{{ extra }}",
      "{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system') }}{% endif %}ok",
      // precedence and printing
      "{{ 'a' + 'b '|trim + 'c' }}{{ -1|abs }}{{ [1, 2, 3]|length > 2 }}{{ messages|length - 1 }}{{ not messages|length }}{{ 1 + 2 ~ 3 * 2 }}",
      "{{ messages }}{{ 10 / 4 }}{{ 10 / 5 }}{{ 1e300 * 1e300 }}{{ 0.1 * 3 }}{{ 1 / 3 }}{{ 2.0 ** 0.5 }}{{ 123456789012345678 }}{{ 1e15 }}{{ 1.5e-7 }}",
      "{{ '\u00a0x\u2003'|trim }}|{{ 'a\\\\b' }}|{{ none|string }}{{ true ~ '' }}|{{ x.y if x is defined else 'n' }}|{{ {'a': 1}.a }}",
      "{%- for m in messages -%}\n  {%- if loop.first -%}\n    [{{ m.role }}]\n  {%- endif %}\n  {{ m.content }}\n{%- endfor %}\n",
      "{{ ['a', 'é\n', '\u200b', 'x\x7f', \"'\", '\\\\'] }}{{ [1.5e-7, -0.0, 1e22] }}",
      "{% for a, b in [[1, 2], (3, 4)] %}{{ a }}{{ b }}{% endfor %}{% for x in {'k': 'v'} %}{{ x }}{% endfor %}",
      "{{ none|selectattr('type', 'equalto', 'x')|list }}{{ none|map('upper')|list }}{{ none|reject('none')|list }}{{ 0|select|list }}",
      // runtime errors: both fail
      "{{ undefined_thing.x }}", "{{ 'a' + 1 }}", "{{ foo + 'a' }}", "{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ foo|tojson }}", "{{ raise_exception('boom') }}",
      "{{ 'abc'.nope() }}", "{{ 1 < 'a' }}", "{{ messages.append(1) }}", "{{ range(100001)|length }}", "{% set a, b = [1] %}",
  };
  std::vector<Case> cases;
  for (const char* row : rows) {
    Case c;
    c.label = row;
    c.source = row;
    c.messages = {{"user", "hi"}, {"assistant", " yo "}};
    c.context.bosToken = "<bos>";
    c.context.eosToken = "<eos>";
    c.context.strings = {{"extra", "E"}};
    cases.push_back(std::move(c));
  }
  compareAll(cases);
}

// Syntax errors name the construct and where it is; runtime errors are [chat_template] errors.
TEST(ChatTemplate, ErrorsNameTheConstruct) {
  struct Row {
    std::string source, expected;
  };
  const Row rows[] = {
      {"{% include 'x.jinja' %}", "[chat_template] unknown tag at line 1, column 1: {% include"},
      {"a\n  {% for m in messages %}x", "[chat_template] unclosed block at line 2, column 3: {% for"},
      {"{% if 1 %}x{% endfor %}", "[chat_template] unexpected tag at line 1, column 12: {% endfor"},
      {"{% if 1 %}x{% else %}y", "[chat_template] unclosed block at line 1, column 1: {% if"},
      {"{% endif %}", "[chat_template] unexpected tag at line 1, column 1: {% endif"},
      {"x\n\n{{ m | frobnicate }}", "[chat_template] unknown filter at line 3, column 6: | frobnicate"},
      {"{{ m is frob }}", "[chat_template] unknown test at line 1, column 6: is frob"},
      {"{{ 1 + }}", "[chat_template] expected an expression at line 1, column 8: }}"},
      {"{{ 'abc }}", "[chat_template] unterminated string at line 1, column 4: 'abc }}"},
      {"{{ x", "[chat_template] unclosed expression at line 1, column 1: {{ x"},
      {"{% if x %", "[chat_template] unclosed tag at line 1, column 1: {% if x %"},
      {"{# never closed", "[chat_template] unclosed comment at line 1, column 1: {# never closed"},
      {"{{ a ? b }}", "[chat_template] unexpected character at line 1, column 6: ?"},
      {"{% for x in y recursive %}{% endfor %}", "[chat_template] unsupported at line 1, column 15: recursive loops"},
      {"{{ f(*args) }}", "[chat_template] unsupported at line 1, column 6: *args and **kwargs"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.source);
    EXPECT_EQ(errorOf([&] { ChatTemplate::parse(row.source); }), row.expected);
  }
  const std::vector<ChatMessage> chat = {{"system", "S"}, {"user", "U"}};
  const auto render = [&](const std::string& source) { return errorOf([&] { ChatTemplate::parse(source).apply(chat); }); };
  EXPECT_EQ(render("{{ foo.bar }}"), "[chat_template] 'foo' is undefined at line 1, column 7");
  EXPECT_EQ(render("\n{{ 'a' + 1 }}"), "[chat_template] can only concatenate str (not \"int\") to str at line 2, column 8");
  EXPECT_EQ(render("{{ raise_exception('Bad role: ' + messages[0].role) }}"), "[chat_template] raise_exception: Bad role: system");
  const std::string mistral = readFile(kTemplates + "mistralai-Mistral-7B-Instruct-v0.1.jinja");
  EXPECT_EQ(errorOf([&] { ChatTemplate::parse(mistral).apply(chat); }),
            "[chat_template] raise_exception: Conversation roles must alternate user/assistant/user/assistant/...");
  const std::string gemma = readFile(kTemplates + "google-gemma-2-2b-it.jinja");
  EXPECT_EQ(errorOf([&] { ChatTemplate::parse(gemma).apply(chat); }), "[chat_template] raise_exception: System role not supported");
}

// Templates are untrusted: nesting, recursion, run time and output are bounded by errors.
TEST(ChatTemplate, LimitsAreErrors) {
  const std::vector<ChatMessage> chat = {{"user", "U"}};
  const auto parseError = [](const std::string& source) { return errorOf([&] { ChatTemplate::parse(source); }); };
  const auto renderError = [&](const std::string& source) { return errorOf([&] { ChatTemplate::parse(source).apply(chat); }); };
  EXPECT_NE(parseError("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").find("nesting deeper than"), std::string::npos);
  EXPECT_NE(parseError("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}").find("nesting deeper than"), std::string::npos);
  std::string ifs;
  for (int k = 0; k < 500; ++k) ifs += "{% if 1 %}";
  EXPECT_NE(parseError(ifs).find("nesting deeper than"), std::string::npos);
  std::string chain = "{{ 1";
  for (int k = 0; k < 20000; ++k) chain += " + 1";
  EXPECT_NE(parseError(chain + " }}").find("expression nested deeper than 256"), std::string::npos);
  std::string filters = "{{ 'x'";
  for (int k = 0; k < 20000; ++k) filters += "|trim";
  EXPECT_NE(parseError(filters + " }}").find("nested deeper"), std::string::npos);
  EXPECT_NE(parseError(std::string(300, '-') + "{{ " + std::string(20000, '-') + "1 }}").find("nesting deeper than"), std::string::npos);
  EXPECT_NE(renderError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("macro calls nested deeper than 64"), std::string::npos);
  EXPECT_NE(renderError("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}").find("steps"), std::string::npos);
  EXPECT_NE(renderError("{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}").find("the output is longer than"), std::string::npos);
  EXPECT_NE(renderError("{{ 'x' * 100000000000 }}").find("a string is longer than"), std::string::npos);
  EXPECT_NE(renderError("{{ 9223372036854775807 + 1 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(renderError("{{ 2 ** 64 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(parseError("{{ 99999999999999999999 }}").find("integer literal out of range"), std::string::npos);
  EXPECT_NE(renderError("{% set s = 'x' * 20000000 %}{{ (s ~ s)|length }}").find("a string is longer than"), std::string::npos);
  EXPECT_NE(renderError("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"), "(no radix::Error)");
  EXPECT_NE(renderError("{% macro f(n) %}{{ " + std::string(25, '[') + "f(n + 1)" + std::string(25, ']') + " }}{% endmacro %}{{ f(0) }}")
                .find("evaluation nested deeper than 400"),
            std::string::npos);
  EXPECT_NE(renderError("{% set ns = namespace(x=1) %}{% for i in range(200) %}{% set ns.x = [ns.x] %}{% endfor %}").find("values nested deeper than 100"),
            std::string::npos);
  // No reference cycles (they would leak and recurse forever when printed).
  EXPECT_NE(renderError("{% set ns = namespace() %}{% set ns.me = ns %}").find("cannot hold a namespace"), std::string::npos);
  EXPECT_NE(renderError("{% set a = namespace() %}{% set d = {'n': [a]} %}{% set a.d = d %}{{ a }}").find("cannot hold a namespace"), std::string::npos);
  EXPECT_EQ(renderError("{% set a = namespace(x=[1]) %}{% set b = namespace(a=a) %}{% set a.y = {'k': [2]} %}{{ b }}"), "(no radix::Error)");
}

TEST(ChatTemplate, ParseOnceRenderManyAndConcurrently) {
  const ChatTemplate t = ChatTemplate::parse(readFile(kTemplates + "Qwen-Qwen3-0.6B.jinja"));
  const std::vector<ChatMessage> chat = {{"user", "Q"}, {"assistant", "<think>\nr\n</think>\n\nA"}, {"user", "Q2"}};
  const std::string once = t.apply(chat);
  EXPECT_EQ(once, "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n");
  std::vector<std::thread> threads;
  std::vector<int> same(8, 0);
  for (int k = 0; k < 8; ++k)
    threads.emplace_back([&, k] {
      for (int r = 0; r < 50; ++r) same[k] += t.apply(chat) == once;
    });
  for (auto& th : threads) th.join();
  for (int k = 0; k < 8; ++k) EXPECT_EQ(same[k], 50);
  const ChatTemplate simple = ChatTemplate::parse("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
  EXPECT_EQ(simple.apply({{"user", "Hi"}}), "user: Hi\n");
  ChatContext noPrompt;
  noPrompt.addGenerationPrompt = false;
  EXPECT_EQ(ChatTemplate::parse("{{ add_generation_prompt }}").apply({}, noPrompt), "False");
}

TEST(ChatTemplate, ChatTemplateOfHfFolderAndGguf) {
  TempDir dir("chat-of");
  EXPECT_EQ(radix::chatTemplateOf(dir.path.string()), std::nullopt);
  EXPECT_EQ(radix::chatTemplateOf(dir / "missing"), std::nullopt);
  dir.write("hf/tokenizer_config.json", R"({"bos_token": "<s>", "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"})");
  dir.write("hf/config.json", "{}");
  const std::string want = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}";
  EXPECT_EQ(radix::chatTemplateOf(dir / "hf"), want);
  EXPECT_EQ(radix::chatTemplateOf(dir / "hf/"), want);
  EXPECT_EQ(radix::chatTemplateOf(dir / "hf/config.json"), want);
  dir.write("list/tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  EXPECT_EQ(radix::chatTemplateOf(dir / "list"), "D");
  dir.write("none/tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_EQ(radix::chatTemplateOf(dir / "none"), std::nullopt);
  dir.write("nodefault/tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "R"}]})");
  EXPECT_NE(errorOf([&] { radix::chatTemplateOf(dir / "nodefault"); }).find("without a \"default\" entry"), std::string::npos);
  dir.write("bad/tokenizer_config.json", R"({"chat_template": )");
  EXPECT_NE(errorOf([&] { radix::chatTemplateOf(dir / "bad"); }).find("[chat_template] "), std::string::npos);
  dir.write("number/tokenizer_config.json", R"({"chat_template": 3})");
  EXPECT_NE(errorOf([&] { radix::chatTemplateOf(dir / "number"); }).find("neither a string"), std::string::npos);

  const std::string qwen = readFile(kTemplates + "Qwen-Qwen2.5-7B-Instruct.jinja");
  json spec = {{"version", 3},
               {"metadata", {{"general.architecture", "llama"}, {"tokenizer.chat_template", qwen}}},
               {"tensors", json::array({{{"name", "w"}, {"dims", {2}}, {"type", "F32"}, {"values", {1.0, 2.0}}}})}};
  const std::string specPath = dir.write("spec.json", spec.dump());
  const std::string cmd = "/usr/bin/python3 " RADIX_SOURCE_DIR "/tools/gguf_writer.py " + specPath + " " + (dir / "m.gguf") + " > " +
                          (dir / "gen.log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << readFile(dir / "gen.log");
  EXPECT_EQ(radix::chatTemplateOf(dir / "m.gguf"), qwen);
  spec["metadata"].erase("tokenizer.chat_template");
  dir.write("spec.json", spec.dump());
  const std::string cmd2 = "/usr/bin/python3 " RADIX_SOURCE_DIR "/tools/gguf_writer.py " + specPath + " " + (dir / "plain.gguf") + " > " +
                           (dir / "gen.log") + " 2>&1";
  ASSERT_EQ(std::system(cmd2.c_str()), 0) << readFile(dir / "gen.log");
  EXPECT_EQ(radix::chatTemplateOf(dir / "plain.gguf"), std::nullopt);
  // The template read from the GGUF renders.
  const auto fromGguf = radix::chatTemplateOf(dir / "m.gguf");
  ASSERT_TRUE(fromGguf);
  EXPECT_EQ(ChatTemplate::parse(*fromGguf).apply({{"user", "Hi"}}),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
