#!/usr/bin/python3
"""Renders chat templates as Hugging Face transformers does (the oracle of chat_template_test.cpp).

stdin: one JSON case, or a JSON list of cases:
  {"template": "PATH.jinja" (or "source": "TEXT"), "messages": [{"role": .., "content": ..}, ..],
   "context": {"bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true, "strings": {..}}}
stdout: for one case the rendered text (exit 1 with the error on stderr); for a list, a JSON list of
{"text": ..} or {"error": ..}.
The environment is transformers' (utils/chat_template_utils.py): ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks, loopcontrols and generation blocks, raise_exception, strftime_now, a json.dumps tojson, and
tools=None, documents=None in the context.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """{% generation %}...{% endgeneration %} renders its body, as transformers' AssistantTracker."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_compiled = {}


def render(env, case):
    if "source" in case:
        source = case["source"]
    else:
        with open(case["template"], encoding="utf-8") as f:
            source = f.read()
    if source not in _compiled:  # jinja2 compiles slowly: once per template text
        _compiled[source] = env.from_string(source)
    context = case.get("context", {})
    variables = dict(context.get("strings", {}))
    variables.update({k: bool(v) for k, v in context.get("flags", {}).items()})
    variables.update(bos_token=context.get("bos_token", ""), eos_token=context.get("eos_token", ""))
    return _compiled[source].render(messages=case.get("messages", []), tools=None, documents=None,
                                          add_generation_prompt=context.get("add_generation_prompt", True),
                                          **variables)


def main():
    cases = json.load(sys.stdin)
    env = environment()
    if isinstance(cases, dict):
        try:
            sys.stdout.buffer.write(render(env, cases).encode("utf-8"))
        except Exception as e:
            print(f"{type(e).__name__}: {e}", file=sys.stderr)
            sys.exit(1)
        return
    results = []
    for case in cases:
        try:
            results.append({"text": render(env, case)})
        except Exception as e:
            results.append({"error": f"{type(e).__name__}: {e}"})
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
