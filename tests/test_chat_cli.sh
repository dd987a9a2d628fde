#!/bin/sh
# tests/test_chat_cli.sh - chat templates end to end: tfm-convert --chat-template stores a
# template (warning about markers that are not tokens), tfm-chat --print-prompt prints exactly
# the jinja2 goldens, and a conversation piped through tfm-chat on the demo model gives each
# reply exactly what greedy tfm-generate gives for the same prompt ids evaluated from scratch
# (so reusing the KV cache across turns changes nothing), reuses the cache, /reset, --stop,
# and a context too small for the conversation.
# Run from the project root after `make` (make test does). Prints "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
BIN=${BIN:-build}
CHAT=$BIN/tfm-chat CONV=$BIN/tfm-convert GEN=$BIN/tfm-generate TOK=$BIN/tfm-tokenize
G=tests/data/chat/golden MSG=tests/data/chat/messages TPL=tests/data/chat/templates
W=build/test_chat_cli.$$
rm -rf "$W" && mkdir -p "$W" || exit 1
[ -n "$KEEP" ] || trap 'rm -rf "$W"' EXIT
passed=0 failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { d=$1; shift; if "$@"; then pass; else fail "$d"; fi; }
if [ ! -f models/demo/config.json ]; then
  echo "SKIP: models/demo is absent"; echo "test_chat_cli: 0 passed, 0 failed"; exit 0
fi
M=$W/demo_chatml.tfm

# conversion: the template goes in; the markers the demo vocabulary lacks are named
$CONV models/demo -o "$M" --type f16 --quiet --chat-template $TPL/chatml.jinja 2> "$W/conv.err"
check "tfm-convert --chat-template" [ $? -eq 0 ]
check "warning names <|im_start|>" grep -q 'marker "<|im_start|>" is not a token' "$W/conv.err"
check "warning names <|im_end|>" grep -q 'marker "<|im_end|>" is not a token' "$W/conv.err"
$CONV models/demo -o "$W/x.tfm" --quiet --chat-template /nonexistent.jinja 2> /dev/null
check "--chat-template on a missing file fails" [ $? -eq 1 ]

# where tfm-convert finds a template: tokenizer_config.json's chat_template (a string, or the
# "default" of the list form), chat_template.jinja beside it, GGUF tokenizer.chat_template; the
# bos_token / eos_token strings come with it (null: undefined), else the ids' texts
T=$(cat $TPL/tiny.jinja)
hf() { # hf NAME TOKENIZER_CONFIG_JSON: a copy of models/demo with that tokenizer_config.json
  mkdir -p "$W/$1" && for f in config.json model.safetensors tokenizer.json; do ln -sf "$PWD/models/demo/$f" "$W/$1/$f"; done
  [ -z "$2" ] || printf '%s' "$2" > "$W/$1/tokenizer_config.json"
}
prompt_of() { $CONV --vocab-only "$1" -o "$W/v.tfm" --quiet 2> "$W/v.err" && $CHAT -m "$W/v.tfm" --messages $MSG/user.json --print-prompt; }
hf str '{"bos_token": "<s>", "eos_token": {"content": "</s>", "special": true}, "chat_template": "'"$T"'"}'
check "tokenizer_config.json chat_template string, bos/eos strings" [ "$(prompt_of "$W/str")" = "<s><user>Hello</s>" ]
hf list '{"bos_token": null, "eos_token": "</s>", "chat_template": [{"name": "tool_use", "template": "no"}, {"name": "default", "template": "'"$T"'"}]}'
check "the list form's default; a null bos_token is undefined" [ "$(prompt_of "$W/list")" = "<user>Hello</s>" ]
hf file '{"eos_token": "E"}'; cp $TPL/tiny.jinja "$W/file/chat_template.jinja"
check "chat_template.jinja beside tokenizer_config.json" [ "$(prompt_of "$W/file")" = "<user>HelloE" ]
hf none ''; cp $TPL/tiny.jinja "$W/none/chat_template.jinja"
check "no tokenizer_config.json: bos/eos are the ids' texts" [ "$(prompt_of "$W/none")" = "<|endoftext|><user>Hello<|endoftext|>" ]
check "GGUF tokenizer.chat_template" [ "$(prompt_of tests/data/gguf/tok/neox_vocab_chat.gguf)" = "<|endoftext|><user>Hello<|endoftext|>" ]
$CONV --vocab-only "$W/str" -o "$W/v.tfm" --quiet --chat-template $TPL/tags.jinja 2> /dev/null && $CHAT -m "$W/v.tfm" --messages $MSG/multi_turn.json --print-prompt > "$W/p"
check "--chat-template overrides tokenizer_config.json's" cmp -s "$W/p" $G/tags.multi_turn.1.txt
hf nochat '{"bos_token": "<s>"}'
$CONV --vocab-only "$W/nochat" -o "$W/v.tfm" --quiet; check "a tokenizer without a template converts" [ $? -eq 0 ]
$CHAT -m "$W/v.tfm" --messages $MSG/user.json --print-prompt > /dev/null 2>&1
check "no template anywhere: tfm-chat exits 1" [ $? -eq 1 ]

# --print-prompt: byte for byte the goldens (add_generation_prompt on)
for c in user system_user multi_turn unicode whitespace markup tool_calls empty_content; do
  $CHAT -m "$M" --messages $MSG/$c.json --print-prompt > "$W/p" 2> "$W/err"
  check "print-prompt $c equals $G/chatml.$c.1.txt" cmp -s "$W/p" $G/chatml.$c.1.txt
done
$CHAT -m "$M" --template $TPL/tags.jinja --messages $MSG/multi_turn.json --print-prompt > "$W/p"
check "--template overrides the model's" cmp -s "$W/p" $G/tags.multi_turn.1.txt
$CHAT -m "$M" --template $TPL/reasoning.jinja --vars $MSG/tools.vars.json --messages $MSG/tools.json --print-prompt > "$W/p"
check "--vars" cmp -s "$W/p" $G/reasoning.tools.1.txt
$CHAT -m "$M" --template $TPL/turns.jinja --messages $MSG/not_alternating.json --print-prompt > /dev/null 2> "$W/err"
check "raise_exception: exit 1" [ $? -eq 1 ]
check "raise_exception: its message" grep -q 'Roles must alternate between user and assistant' "$W/err"
$CHAT -m build/demo.tfm --messages $MSG/user.json --print-prompt > /dev/null 2> "$W/err"
check "a model without a template: exit 1" [ $? -eq 1 ]
check "a model without a template: says so" grep -q 'has no chat template' "$W/err"
$CHAT --help | grep -q -- '--print-prompt'; check "--help" [ $? -eq 0 ]
$CHAT -m "$M" --bogus > /dev/null 2>&1; check "unknown option: exit 1" [ $? -eq 1 ]

# a piped conversation, greedy; each reply against tfm-generate on the same prompt from scratch
S="You are the narrator."
printf 'And God said\nLet there be light\n/reset\nIn the beginning\n' |
  $CHAT -m "$M" --temp 0 -n 12 -s "$S" > "$W/chat.out" 2> "$W/chat.err"
check "conversation: exit 0" [ $? -eq 0 ]
check "conversation: three replies" [ "$(grep -c '^\[prompt' "$W/chat.err")" -eq 3 ]
check "conversation: /reset acknowledged" grep -q 'conversation reset' "$W/chat.err"
# reply k of the conversation is line k of stdout (the demo writes no newline in 12 tokens)
json() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }
r1=$(sed -n 1p "$W/chat.out")
printf '[{"role": "system", "content": "%s"}, {"role": "user", "content": "And God said"}]' "$S" > "$W/m1.json"
printf '[{"role": "system", "content": "%s"}, {"role": "user", "content": "And God said"}, {"role": "assistant", "content": "%s"}, {"role": "user", "content": "Let there be light"}]' "$S" "$(json "$r1")" > "$W/m2.json"
k=1
for m in m1 m2; do
  $CHAT -m "$M" --messages "$W/$m.json" --print-prompt > "$W/$m.prompt"
  ids=$($TOK -m "$M" -f "$W/$m.prompt")
  $GEN -m "$M" --tokens "$ids" --temp 0 -n 12 -t 1 > "$W/$m.gen" 2> /dev/null
  # tfm-generate echoes the prompt's tokens first; the reply is what follows them
  want=$(tail -c +"$(($(wc -c < "$W/$m.prompt") + 1))" "$W/$m.gen" | head -n 1)
  got=$(sed -n ${k}p "$W/chat.out")
  check "turn $k equals greedy tfm-generate on the rendered prompt ('$got' vs '$want')" [ "$got" = "$want" ]
  k=$((k + 1))
done
# turn 2 evaluates only what follows the cached prefix; after /reset, everything
l2=$(sed -n 2p "$W/chat.err"); l3=$(sed -n '/conversation reset/{n;p}' "$W/chat.err")
total=$(echo "$l2" | sed -E 's/^\[prompt ([0-9]+) tokens, ([0-9]+) new.*/\1/'); new=$(echo "$l2" | sed -E 's/^\[prompt ([0-9]+) tokens, ([0-9]+) new.*/\2/')
check "turn 2 reuses the KV cache ($new of $total tokens new)" [ "$new" -gt 0 ] && [ "$new" -lt "$total" ]
t3=$(echo "$l3" | sed -E 's/^\[prompt ([0-9]+) tokens, ([0-9]+) new.*/\1 \2/')
check "after /reset every token is new ($t3)" [ "${t3% *}" = "${t3#* }" ]

# --stop: a token of the reply ends it there
printf 'And God said\n' | $CHAT -m "$M" --temp 0 -n 12 -s "$S" --stop "," > "$W/stop.out" 2> "$W/stop.err"
check "--stop: reply ends at the token" [ "$(head -n 1 "$W/stop.out")" = "$(sed -n 1p "$W/chat.out" | cut -d, -f1)" ]
check "--stop: reported as end of turn" grep -q 'stop: end of turn' "$W/stop.err"
printf 'x\n' | $CHAT -m "$M" --stop "not one token" > /dev/null 2>&1
check "--stop with several tokens: exit 1" [ $? -eq 1 ]

# a 96-token context: old turns are dropped, a line longer than the context is refused, and
# a reply that fills the context stops there; the chat goes on
long=$(printf 'word %.0s' $(seq 1 120))
printf 'And God said\nLet there be light\nAnd there was light\n%s\nIn the beginning\n' "$long" |
  $CHAT -m "$M" --temp 0 -n 40 -c 96 -s "$S" > "$W/ctx.out" 2> "$W/ctx.err"
check "small context: exit 0" [ $? -eq 0 ]
check "small context: oldest turns dropped" grep -q 'context full: the [0-9]* oldest message' "$W/ctx.err"
check "small context: too long a line refused" grep -q 'too long for the 96-token context' "$W/ctx.err"
check "small context: four replies" [ "$(grep -c '^\[prompt' "$W/ctx.err")" -eq 4 ]
check "small context: never past 96 positions" [ -z "$(grep -E 'of 96 positions' "$W/ctx.err" | grep -vE ' (9[0-6]|[1-8]?[0-9]) of 96')" ]

echo "test_chat_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
