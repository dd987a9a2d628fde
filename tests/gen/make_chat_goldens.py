#!/usr/bin/env python3
"""Writes tests/data/chat/golden/: the prompt jinja2 renders (set up as transformers does, see
chat_ref.py) for every template in tests/data/chat/templates, every message list in
tests/data/chat/messages and add_generation_prompt on and off, with bos_token "<s>",
eos_token "</s>" and strftime_now's date 2024-07-26. @huggingface/jinja (chat_ref.mjs, found
through NODE_PATH) renders the same; index.txt records whether it agrees.

index.txt, one line per golden:  TEMPLATE CASE GEN KIND JS
  GEN 1/0: add_generation_prompt; KIND ok (the file is the prompt), raise (the file is
  "ERROR: " + the raise_exception message, tfm.h must give exactly it) or error (rendering
  fails, messages differ between engines); JS same / differs / absent.
It also fills the "#expect" part of every case in tests/data/chat/exprs.txt (one construct
per case) with jinja2's output, and fails if jinja2 rejects a case.
usage: NODE_PATH=/path/to/node_modules python3 tests/gen/make_chat_goldens.py"""
import os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "chat")
FIXED = ["--bos", "<s>", "--eos", "</s>", "--date", "2024-07-26"]


def render(cmd):
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode not in (0, 1):
        sys.exit("%s failed: %s" % (" ".join(cmd), r.stderr.decode()))
    return r.stdout


def main():
    golden = os.path.join(DATA, "golden")
    os.makedirs(golden, exist_ok=True)
    for f in os.listdir(golden):
        os.remove(os.path.join(golden, f))
    have_js = subprocess.run(["node", "-e", "require('@huggingface/jinja')"], capture_output=True).returncode == 0
    index, agree = [], 0
    for t in sorted(os.listdir(os.path.join(DATA, "templates"))):
        tpath = os.path.join(DATA, "templates", t)
        source = open(tpath, encoding="utf-8").read()
        for m in sorted(os.listdir(os.path.join(DATA, "messages"))):
            if m.endswith(".vars.json"):
                continue
            mpath = os.path.join(DATA, "messages", m)
            vpath = mpath[:-5] + ".vars.json"
            extra = ["--vars", vpath] if os.path.exists(vpath) else []
            for gen in (1, 0):
                args = [tpath, mpath] + FIXED + extra + ([] if gen else ["--no-generation-prompt"])
                py = render([sys.executable, os.path.join(HERE, "chat_ref.py")] + args)
                kind = "ok"
                if py.startswith(b"ERROR: "):
                    msg = py[7:].decode("utf-8")
                    kind = "raise" if ("'%s'" % msg in source or '"%s"' % msg in source) else "error"
                js = "absent"
                if have_js:
                    out = render(["node", os.path.join(HERE, "chat_ref.mjs")] + args)
                    same = out == py or (kind != "ok" and out.startswith(b"ERROR: ") and (kind == "error" or out == py))
                    js = "same" if same else "differs"
                    agree += same
                name = "%s.%s.%d.txt" % (t[:-6], m[:-5], gen)
                with open(os.path.join(golden, name), "wb") as f:
                    f.write(py)
                index.append("%s %s %d %s %s" % (t[:-6], m[:-5], gen, kind, js))
    with open(os.path.join(golden, "index.txt"), "w") as f:
        f.write("\n".join(index) + "\n")
    kinds = {k: sum(1 for line in index if line.split()[3] == k) for k in ("ok", "raise", "error")}
    print("%d goldens (%s); @huggingface/jinja agrees on %d" % (len(index), kinds, agree))


def exprs(have_js):
    """Rewrites exprs.txt with each case's output from jinja2."""
    path = os.path.join(DATA, "exprs.txt")
    text = open(path, encoding="utf-8", newline="").read()
    cases = re.findall(r"#case (\S+)\n(.*?)\n#expect\n.*?#end\n", text, re.S)
    head = text[:text.index("#case ")]
    out, agree = [head], 0
    msgs = os.path.join(DATA, "messages", "multi_turn.json")
    with tempfile.TemporaryDirectory() as tmp:
        for name, template in cases:
            tpath = os.path.join(tmp, name + ".jinja")
            with open(tpath, "w", encoding="utf-8", newline="") as f:
                f.write(template)
            args = [tpath, msgs] + FIXED
            py = render([sys.executable, os.path.join(HERE, "chat_ref.py")] + args)
            if py.startswith(b"ERROR: "):
                sys.exit("exprs.txt case %s: jinja2 says %s" % (name, py.decode()))
            if have_js:
                agree += render(["node", os.path.join(HERE, "chat_ref.mjs")] + args) == py
            out.append("#case %s\n%s\n#expect\n%s\n#end\n" % (name, template, py.decode("utf-8")))
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(out))
    print("exprs.txt: %d cases; @huggingface/jinja agrees on %d" % (len(cases), agree))


if __name__ == "__main__":
    main()
    exprs(subprocess.run(["node", "-e", "require('@huggingface/jinja')"], capture_output=True).returncode == 0)
