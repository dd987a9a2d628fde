#!/usr/bin/env python3
"""Renders a chat template as Hugging Face transformers' apply_chat_template does (jinja2's
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loopcontrols, transformers'
tojson, raise_exception and strftime_now), for tfm.h's chat goldens and checks.

usage: chat_ref.py TEMPLATE MESSAGES.json [--vars F] [--bos S] [--eos S] [--date YYYY-MM-DD]
                   [--no-generation-prompt]
Prints the prompt; on an error "ERROR: <message>" and exit 1. Needs jinja2 (pip or apt
python3-jinja2); the settings follow transformers/utils/chat_template_utils.py."""
import argparse, datetime, json, sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def environment(date):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    if date is not None:
        env.globals["strftime_now"] = lambda fmt: date.strftime(fmt)
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("template")
    ap.add_argument("messages")
    ap.add_argument("--vars")
    ap.add_argument("--bos")
    ap.add_argument("--eos")
    ap.add_argument("--date")
    ap.add_argument("--no-generation-prompt", action="store_true")
    a = ap.parse_args()
    with open(a.template, encoding="utf-8", newline="") as f:
        source = f.read()
    with open(a.messages, encoding="utf-8") as f:
        messages = json.load(f)
    kwargs = {}
    if a.vars:
        with open(a.vars, encoding="utf-8") as f:
            kwargs = json.load(f)
    special = {}
    if a.bos is not None:
        special["bos_token"] = a.bos
    if a.eos is not None:
        special["eos_token"] = a.eos
    date = datetime.datetime.strptime(a.date, "%Y-%m-%d") if a.date else None
    context = {"messages": messages, "tools": None, "documents": None,
               "add_generation_prompt": not a.no_generation_prompt, **special, **kwargs}
    try:
        out = environment(date).from_string(source).render(**context)
    except Exception as e:  # the message, as transformers surfaces it
        sys.stdout.write("ERROR: %s" % e)
        return 1
    sys.stdout.buffer.write(out.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
