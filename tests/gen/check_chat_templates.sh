#!/bin/sh
# Dev-time check: renders REAL chat templates (not in the repo) through tfm.h (build/chat_render)
# and through Hugging Face's engines - jinja2 set up as transformers does (chat_ref.py) and
# @huggingface/jinja (chat_ref.mjs) - for every message list in tests/data/chat/messages, and
# compares the prompts byte for byte.
#   sh tests/gen/check_chat_templates.sh [TEMPLATE_DIR...]
# Default dirs: ../peer/llama.cpp/models/templates and ../chat-templates (skipped if absent).
# Every message list is rendered twice: as it is, and with the tools of tools.vars.json.
# Needs python3 with jinja2; node with @huggingface/jinja on NODE_PATH (else that column is "-").
# Errors match when both fail (raise_exception messages must be equal).
# Prints one line per template: cases equal to jinja2 (of them, how many fail in both, e.g. a
# raise_exception for a system role) / to @huggingface/jinja, and writes the
# differing outputs to build/chat_check/.
cd "$(dirname "$0")/../.." || exit 1
[ $# -gt 0 ] || set -- ../peer/llama.cpp/models/templates ../chat-templates
make -s build/chat_render || exit 1
out=build/chat_check; rm -rf "$out"; mkdir -p "$out"
have_js=0; node -e 'require("@huggingface/jinja")' 2>/dev/null && have_js=1
found=0; bad=0
norm() { # the error text without tfm.h's "line L, column C: " and the result name
  sed -e '1s/^ERROR: chat template error: chat template: /ERROR: /' -e '1s/^ERROR: line [0-9]*, column [0-9]*: /ERROR: /'
}
for dir in "$@"; do
  [ -d "$dir" ] || { echo "SKIP: $dir is absent"; continue; }
  for t in "$dir"/*.jinja; do
    [ -f "$t" ] || continue
    found=1; name=$(basename "$t" .jinja); n=0; py=0; js=0; errs=0
    for m in tests/data/chat/messages/*.json tests/data/chat/messages/*.json; do
      # each message list twice: as it is, then with the tools of tools.vars.json
      case "$m" in *.vars.json) continue ;; esac
      c=$(basename "$m" .json); v="${m%.json}.vars.json"
      [ -f "$out/$name.$c.done" ] && { [ -f "$v" ] && continue; c="$c+tools"; v=tests/data/chat/messages/tools.vars.json; }
      touch "$out/$name.$c.done"; n=$((n + 1))
      set -- --bos "<s>" --eos "</s>" --date 2024-07-26; [ -f "$v" ] && set -- "$@" --vars "$v"
      build/chat_render "$t" "$m" "$@" | norm > "$out/$name.$c.tfm"
      python3 tests/gen/chat_ref.py "$t" "$m" "$@" > "$out/$name.$c.py"
      [ $have_js = 1 ] && node tests/gen/chat_ref.mjs "$t" "$m" "$@" > "$out/$name.$c.js"
      eq() { a="$out/$name.$c.tfm"; b="$out/$name.$c.$1"
        if head -c 7 "$a" | grep -q '^ERROR: ' && head -c 7 "$b" | grep -q '^ERROR: '; then
          # two errors: equal unless one is a raise_exception message the other lacks
          grep -qF -- "$(cat "$b" | sed 's/^ERROR: //')" "$a" 2>/dev/null || ! grep -q raise "$t"
        else cmp -s "$a" "$b"; fi; }
      head -c 7 "$out/$name.$c.py" | grep -q '^ERROR: ' && errs=$((errs + 1))
      eq py && py=$((py + 1)) && rm -f "$out/$name.$c.py"
      [ $have_js = 1 ] && eq js && js=$((js + 1)) && rm -f "$out/$name.$c.js"
    done
    rm -f "$out/$name".*.done
    [ $have_js = 1 ] || js=-
    [ "$py" = "$n" ] || bad=1
    printf '%-48s jinja2 %2s/%s (%s both errors)  @huggingface/jinja %2s/%s\n' "$name" "$py" "$n" "$errs" "$js" "$n"
  done
done
[ $found = 1 ] || echo "SKIP: no templates found"
[ $bad = 0 ] && echo "all templates match jinja2 byte for byte" || echo "some differ: see $out"
exit $bad
