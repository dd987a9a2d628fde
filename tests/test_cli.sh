#!/bin/sh
# tests/test_cli.sh - the command-line programs (build/tfm-generate, tfm-tokenize, tfm-perplexity)
# and examples/minimal.c, run as a user runs them: help, every class of bad argument, corrupt
# model files, determinism across thread counts, the --dump-logits layout against the golden
# logits, tokenizer ids against the Hugging Face test vectors, the perplexity windowing
# recomputed here from dumped logits, llama2.c stories260K against llama2.c itself (ids, logits,
# greedy text), and the demo model against its float64 reference.
# Run from the project root after `make` (make test does). BIN=dir tests other binaries.
# Prints "N passed, N failed" and exits non-zero on any failure.
cd "$(dirname "$0")/.." || exit 1
SHARED=${SHARED:-../shared}
BIN=${BIN:-build} # where the programs are (a sanitizer or mutant build elsewhere)
GEN=$BIN/tfm-generate TOK=$BIN/tfm-tokenize PPL=$BIN/tfm-perplexity CONV=$BIN/tfm-convert
DATA=tests/data/models
M=build/models/neox_tok.tfm  # 2 layers, n_vocab 320 padded past a 300-token tokenizer, n_ctx 64
MP=build/models/neox_par.tfm # no tokenizer, n_vocab 160, n_ctx 64
W=build/test_cli.$$ # scratch of this run (other engineers may run the suite at the same time)
rm -rf "$W" && mkdir -p "$W" || exit 1
passed=0 failed=0

pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
# check DESC CMD...: CMD succeeds.
check() { d=$1; shift; if "$@"; then pass; else fail "$d"; fi; }
# run_ok DESC CMD...: exit status 0; stdout in $W/out, stderr in $W/err.
run_ok() {
  d=$1; shift
  "$@" >"$W/out" 2>"$W/err"; rc=$?
  if [ "$rc" -eq 0 ]; then pass; else fail "$d: exit $rc: $(head -c 300 "$W/err")"; fi
  return "$rc"
}
# run_err DESC CMD...: exit status exactly 1 (not a crash: >128) and a message on stderr.
run_err() {
  d=$1; shift
  "$@" >"$W/out" 2>"$W/err"; rc=$?
  if [ "$rc" -eq 1 ] && [ -s "$W/err" ]; then pass
  else fail "$d: expected exit 1 with a message, got exit $rc: $(head -c 300 "$W/err")"; fi
}
# Float32 files as one number per line.
floats() { od -An -v -tf4 "$1" | awk '{for (i = 1; i <= NF; i++) print $i}'; }
# max |a - b| / (1 + |b|) over two float32 files of equal length
maxdiff() {
  floats "$1" >"$W/fa"; floats "$2" >"$W/fb"
  paste "$W/fa" "$W/fb" | awk '{d = $1 - $2; if (d < 0) d = -d; b = $2 < 0 ? -$2 : $2;
    d /= 1 + b; if (d > m) m = d} END {printf "%.3g\n", m + 0}'
}
# mean cross-entropy (nats) of ids[j+1] under logits row j, j = 0..n-2: LOGITS N_VOCAB "IDS"
ref_ce_sum() {
  floats "$1" | awk -v V="$2" -v ids="$3" '
    BEGIN {n = split(ids, t, " ")} {x[NR - 1] = $1}
    END {for (j = 0; j < n - 1; j++) {m = -1e30
           for (c = 0; c < V; c++) if (x[j*V + c] > m) m = x[j*V + c]
           s = 0; for (c = 0; c < V; c++) s += exp(x[j*V + c] - m)
           ce += log(s) + m - x[j*V + t[j + 2]]}
         printf "%.9f %d\n", ce, n - 1}'
}
# |a - b| <= tol
close_to() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(d <= t)}'; }
# check_near DESC A B BOUND: print "DESC maxdiff |A - B| (bound)" (tests/run.sh shows these), check it
check_near() {
  dd_=$(awk -v a="$2" -v b="$3" 'BEGIN {d = a - b; printf "%.3g", d < 0 ? -d : d}')
  echo "    $1: maxdiff $dd_ (bound $4)"
  check "$1 ($2 vs $3)" close_to "$2" "$3" "$4"
}
fsize() { wc -c <"$1" | tr -d ' '; }

for b in $GEN $TOK $PPL; do
  [ -x "$b" ] || { echo "FAIL: $b is missing (run make first)"; echo "test_cli: 0 passed, 1 failed"
                   rm -rf "$W"; exit 1; }
done

# --- help: exit 0 and a usage text on stdout ---------------------------------------------------
for b in $GEN $TOK $PPL; do
  for h in --help -h; do
    run_ok "$b $h" "$b" "$h" && check "$b $h prints usage" grep -q '^usage: ' "$W/out"
  done
  run_err "$b without arguments" "$b"
  run_err "$b unknown flag" "$b" --bogus
done
run_ok "tfm-generate --help" $GEN --help
for f in '-n N' '--temp T' '--top-k K' '--top-p P' '--min-p P' '--repeat-penalty R' '--seed N' \
         '-t N' '--dump-logits FILE' '--tokens LIST'; do
  check "tfm-generate --help lists $f" grep -q -e "$f" "$W/out"
done
check "tfm-generate --help documents the defaults" grep -q 'default 0.8' "$W/out"

# --- minimal.c compiles as strict C99 -------------------------------------------------------------
CCBIN=${CC:-cc}
run_ok "examples/minimal.c compiles" \
  "$CCBIN" -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -I. examples/minimal.c -o "$W/minimal" -lm &&
  mv -f "$W/minimal" build/minimal
run_err "minimal with a missing model" build/minimal /nonexistent/model.tfm
run_ok "minimal --help" build/minimal --help

if [ ! -f "$M" ] || [ ! -f "$MP" ]; then
  echo "SKIP: $M or $MP missing (make test converts tests/data/models); model tests skipped"
  echo "test_cli: $passed passed, $failed failed"
  rm -rf "$W"; [ "$failed" -eq 0 ]; exit
fi
PROMPT_PAR=$(cat $DATA/neox_par/tokens.txt)
TOKS_PAR=$(echo $PROMPT_PAR | tr ' ' ',')
N_PAR=$(echo $PROMPT_PAR | wc -w)

# --- bad arguments: exit 1 with a message ---------------------------------------------------------
G="$GEN -m $M -t 1"
if [ -f build/demo.tfm ]; then   # without -m the CLIs use the demo model
  run_ok "generate: without -m (build/demo.tfm)" $GEN -p hi -n 2 --seed 1
else
  run_err "generate: without -m and no build/demo.tfm" $GEN -p hi -n 2
fi
run_err "generate: missing model file"    $GEN -m "$W/nonexistent.tfm" -p hi
run_err "generate: model is a directory"  $GEN -m build -p hi
run_err "generate: -m without value"      $GEN -m
run_err "generate: -n without value"      $G -p hi -n
run_err "generate: -p and --tokens"       $G -p hi --tokens 1,2
run_err "generate: neither -p nor tokens" $G
run_err "generate: -n -1"                 $G -p hi -n -1
run_err "generate: -n abc"                $G -p hi -n abc
run_err "generate: -n 12x"                $G -p hi -n 12x
run_err "generate: -n empty"              $G -p hi -n ''
run_err "generate: --temp -0.5"           $G -p hi --temp -0.5
run_err "generate: --temp x"              $G -p hi --temp x
run_err "generate: --temp nan"            $G -p hi --temp nan
run_err "generate: --top-k -1"            $G -p hi --top-k -1
run_err "generate: --top-k 2.5"           $G -p hi --top-k 2.5
run_err "generate: --top-p 0"             $G -p hi --top-p 0
run_err "generate: --top-p 1.5"           $G -p hi --top-p 1.5
run_err "generate: --top-p -0.1"          $G -p hi --top-p -0.1
run_err "generate: --min-p 2"             $G -p hi --min-p 2
run_err "generate: --repeat-penalty -1"   $G -p hi --repeat-penalty -1
run_err "generate: --seed -3"             $G -p hi --seed -3
run_err "generate: --seed 1e3"            $G -p hi --seed 1e3
run_err "generate: -t 0"                  $G -p hi -t 0
run_err "generate: token id = n_vocab"    $G --tokens 1,320
run_err "generate: token id negative"     $G --tokens 1,-1
run_err "generate: token id huge"         $G --tokens 99999999999999999999
run_err "generate: token list not numeric" $G --tokens 1,x,2
run_err "generate: -p without tokenizer"  $GEN -m $MP -p hi
run_err "generate: prompt past the context" $GEN -m $MP -t 1 -n 1 \
  --tokens "$(seq 1 65 | tr '\n' ',')"
run_err "generate: --dump-logits unwritable" $G -p hi -n 1 --dump-logits "$W/no/such/dir/x.f32"

# --- corrupt model files through tfm-generate -----------------------------------------------------
# put FILE OFFSET OCTAL-BYTES: overwrite bytes in place.
put() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }
# flip FILE OFFSET: invert every bit of one byte.
flip() {
  v=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  put "$1" "$2" "\\$(printf '%03o' $((255 - v)))"
}
SIZE=$(fsize $MP)
corrupt_run() { run_err "corrupt model: $1" $GEN -m "$W/bad.tfm" --tokens 1,2 -n 1 -t 1; }
cp $MP "$W/bad.tfm"; put "$W/bad.tfm" 0 'XFMODEL\000'; corrupt_run "bad magic"
for n in 0 1 7 8 100 255 256 300 383 384 1000 $((SIZE / 2)) $((SIZE - 64)) $((SIZE - 1)); do
  head -c "$n" $MP >"$W/bad.tfm"; corrupt_run "truncated to $n of $SIZE bytes"
done
# header fields (see the FILE FORMAT in tfm.h): version, header_bytes, n_vocab, n_layers,
# n_heads, n_kv_heads, d_model, d_ff, n_tensors, a reserved byte
for off in 8 12 20 28 32 36 40 48 84 88 200 255; do
  cp $MP "$W/bad.tfm"; flip "$W/bad.tfm" $off; corrupt_run "flipped header byte $off"
done
# first directory entry (at 256): name, dtype, rank, shape
for off in 256 320 324 328; do
  cp $MP "$W/bad.tfm"; flip "$W/bad.tfm" $off; corrupt_run "flipped directory byte $off"
done
cp $MP "$W/bad.tfm"; put "$W/bad.tfm" 360 '\000\000\000\000\001\000\000\000'
corrupt_run "tensor data_offset past the end"
cp $MP "$W/bad.tfm"; put "$W/bad.tfm" 368 '\377\377\377\377\377\377\377\377'
corrupt_run "tensor data_bytes overflowing"
cp $M "$W/bad.tfm"; put "$W/bad.tfm" 96 '\000\000\000\000\001\000\000\000'
corrupt_run "tokenizer_offset past the end"
cp $M "$W/bad.tfm"; put "$W/bad.tfm" 104 '\000\000\000\001\000\000\000\000'
corrupt_run "tokenizer_bytes past the end"

# --- generation -----------------------------------------------------------------------------------
run_ok "greedy -t 1" $GEN -m $M -p "The fox" -n 20 --temp 0 -t 1 && cp "$W/out" "$W/greedy1"
run_ok "greedy -t 2" $GEN -m $M -p "The fox" -n 20 --temp 0 -t 2 && cp "$W/out" "$W/greedy2"
check "greedy output identical with -t 1 and -t 2" cmp -s "$W/greedy1" "$W/greedy2"
check "output starts with the prompt" grep -q '^The fox' "$W/greedy1"
check "output continues the prompt" [ "$(wc -c <"$W/greedy1")" -gt 8 ]
check "stderr reports tokens/s" grep -q 'tokens/s' "$W/err"
run_ok "greedy -t 2, no tokenizer" $GEN -m $MP --tokens "$TOKS_PAR" -n 12 --temp 0 -t 2 &&
  cp "$W/out" "$W/ids2"
run_ok "greedy -t 1, no tokenizer" $GEN -m $MP --tokens "$TOKS_PAR" -n 12 --temp 0 -t 1 &&
  cp "$W/out" "$W/ids1"
check "greedy ids identical with -t 1 and -t 2" cmp -s "$W/ids1" "$W/ids2"
check "no tokenizer: prompt + 12 generated ids printed" [ "$(wc -w <"$W/ids1")" -eq $((N_PAR + 12)) ]
check "no tokenizer: the prompt ids are echoed first" \
  [ "$(tr -s ' \n' ' ' <"$W/ids1" | cut -d' ' -f1-$N_PAR)" = "$PROMPT_PAR" ]
check "no tokenizer: every id < n_vocab" \
  awk '{for (i = 1; i <= NF; i++) if ($i !~ /^[0-9]+$/ || $i >= 160) exit 1}' "$W/ids1"
run_ok "sampling, seed 7" $GEN -m $M -p "the dog" -n 24 --temp 0.9 --top-k 20 --top-p 0.9 --min-p 0.01 \
  --repeat-penalty 1.1 --seed 7 -t 1 && cp "$W/out" "$W/seed_a"
run_ok "sampling, seed 7 again" $GEN -m $M -p "the dog" -n 24 --temp 0.9 --top-k 20 --top-p 0.9 \
  --min-p 0.01 --repeat-penalty 1.1 --seed 7 -t 2 && cp "$W/out" "$W/seed_b"
check "same seed, same text" cmp -s "$W/seed_a" "$W/seed_b"
# n_vocab 320 is padded past the 300 tokens the tokenizer knows (ids 300..319 have no text)
run_ok "hot sampling from a padded vocab" $GEN -m $M --tokens 53,258 -n 40 --temp 5 --seed 3 -t 1
run_ok "prompt filling the context exactly" $GEN -m $MP -t 1 -n 5 --temp 0 \
  --tokens "$(seq 1 64 | tr '\n' ',')"
check "context full: no generated ids" [ "$(wc -w <"$W/out")" -eq 64 ]
check "context full: said on stderr" grep -qi 'context' "$W/err"
run_ok "generation runs into the context" $GEN -m $MP -t 1 -n 50 --temp 0 --tokens "$TOKS_PAR"
check "context full: stops at n_ctx 64" [ "$(wc -w <"$W/out")" -eq 64 ]

# --- --dump-logits --------------------------------------------------------------------------------
run_ok "dump, -n 0" $GEN -m $MP --tokens "$TOKS_PAR" -n 0 -t 1 --dump-logits "$W/p0.f32"
check "-n 0: prompt logits only ($N_PAR x 160 x 4 bytes)" \
  [ "$(fsize "$W/p0.f32")" -eq $((N_PAR * 160 * 4)) ]
check "-n 0: nothing generated" [ "$(wc -w <"$W/out")" -eq "$N_PAR" ]
d=$(maxdiff "$W/p0.f32" $DATA/neox_par/logits.f32)
check_near "neox_par dumped prompt logits vs golden (relative)" "$d" 0 1e-4
run_ok "dump, -n 5" $GEN -m $MP --tokens "$TOKS_PAR" -n 5 --temp 0 -t 2 --dump-logits "$W/p5.f32"
check "-n 5: (prompt + 5) x n_vocab x 4 bytes" [ "$(fsize "$W/p5.f32")" -eq $(((N_PAR + 5) * 160 * 4)) ]
check "-n 5: prompt rows equal the -n 0 dump" cmp -s -n $((N_PAR * 160 * 4)) "$W/p0.f32" "$W/p5.f32"
# The rows of the generated tokens must be those of the whole sequence evaluated as a prompt.
SEQ=$(tr -s ' \n' ',' <"$W/out" | sed 's/,$//')
run_ok "dump the generated sequence as a prompt" $GEN -m $MP --tokens "$SEQ" -n 0 -t 1 \
  --dump-logits "$W/seq.f32"
d=$(maxdiff "$W/p5.f32" "$W/seq.f32")
check_near "generated rows vs the sequence as a prompt (relative)" "$d" 0 1e-4
# Greedy from token 5 meets EOS (id 0) within 60 tokens: generation stops there, EOS unprinted.
run_ok "greedy until EOS" $GEN -m $M --tokens 5 -n 60 --temp 0 -t 1 --dump-logits "$W/eos.f32"
check "EOS: said on stderr" grep -q 'end of text' "$W/err"
n_gen=$(sed -n 's/^generation: \([0-9]*\) tokens.*/\1/p' "$W/err")
rows=$(($(fsize "$W/eos.f32") / 1280))
check "EOS: stopped before -n 60 ($n_gen generated)" [ "${n_gen:-60}" -lt 60 ]
check "EOS: 1 + $n_gen generated rows dumped ($rows)" [ "$rows" -eq $((1 + n_gen)) ]
# Greedy picks the argmax over the 300 tokenizer ids (not the 320 padded rows): it is EOS in
# the last dumped row only.
eos_rows() {
  floats "$W/eos.f32" | awk -v R="$rows" '{r = int((NR - 1) / 320); c = (NR - 1) % 320
    if (c < 300 && (c == 0 || $1 > m[r])) {m[r] = $1; a[r] = c}}
    END {for (r = 0; r < R - 1; r++) if (a[r] == 0) exit 1; exit a[R - 1] != 0}'
}
check "EOS: the last dumped row's greedy token is EOS, no earlier one is" eos_rows
# Rebuild the sequence from those argmaxes and evaluate it as a prompt: the same logits mean
# greedy never took a padded id, though some rows' argmax over all 320 is one.
floats "$W/eos.f32" | awk '{r = int((NR - 1) / 320); c = (NR - 1) % 320
  if (c < 300 && (c == 0 || $1 > m[r])) {m[r] = $1; a[r] = c}
  if (c == 0 || $1 > M[r]) {M[r] = $1; A[r] = c}}
  END {printf "5"; for (r = 0; r < NR / 320 - 1; r++) printf ",%d", a[r]; printf "\n"
       for (r = 0; r < NR / 320; r++) if (A[r] >= 300) p++; print p + 0}' >"$W/eos.seq"
n_padded=$(sed -n 2p "$W/eos.seq")
check "EOS: some rows' argmax is a padded id ($n_padded)" [ "$n_padded" -gt 0 ]
run_ok "EOS: the greedy sequence as a prompt" $GEN -m $M --tokens "$(sed -n 1p "$W/eos.seq")" -n 0 -t 1 \
  --dump-logits "$W/eos2.f32"
d=$(maxdiff "$W/eos.f32" "$W/eos2.f32")
check_near "EOS: greedy sampled only tokenizer ids (relative)" "$d" 0 1e-4
# --tokens on a model with a tokenizer echoes the prompt's text: the bytes --decode gives
$TOK -m $M --decode -f $DATA/neox_tok/tokens.txt >"$W/prompt.txt" 2>"$W/err"
run_ok "--tokens separated by spaces" $GEN -m $M --tokens "$(cat $DATA/neox_tok/tokens.txt)" -n 3 -t 1
check "--tokens echoes the prompt text" cmp -s -n "$(fsize "$W/prompt.txt")" "$W/prompt.txt" "$W/out"
run_ok "an empty prompt starts from BOS" $GEN -m $M -p "" -n 3 --temp 0 -t 1
check "empty prompt: generated something" [ "$(fsize "$W/out")" -gt 1 ]
run_ok "dump with a tokenizer, -n 0" $GEN -m $M --tokens "$(tr ' ' ',' <$DATA/neox_tok/tokens.txt)" \
  -n 0 -t 1 --dump-logits "$W/tok0.f32"
check "tokenizer model: 35 x 320 x 4 bytes" [ "$(fsize "$W/tok0.f32")" -eq $((35 * 320 * 4)) ]

# --- tfm-tokenize ---------------------------------------------------------------------------------
run_ok "tokenize the neox_tok text" $TOK -m $M -f $DATA/neox_tok/text.txt
check "neox_tok ids equal tokens.txt" [ "$(cat "$W/out")" = "$(cat $DATA/neox_tok/tokens.txt)" ]
run_ok "tokenize standard input (-f -)" sh -c "$TOK -m $M -f - <$DATA/neox_tok/text.txt"
check "-f - gives the same ids" [ "$(cat "$W/out")" = "$(cat $DATA/neox_tok/tokens.txt)" ]
run_ok "decode tokens.txt" $TOK -m $M --decode -f $DATA/neox_tok/tokens.txt
run_ok "decode, comma separated" $TOK -m $M --decode "$(tr ' ' ',' <$DATA/neox_tok/tokens.txt)"
run_ok "tokenize, add special" $TOK -m $M --add-special "The fox"
check "--add-special wraps in bos 0 ... eos 0" grep -q '^0 .* 0$' "$W/out"
run_err "tokenize: no tokenizer"      $TOK -m $MP hello
run_err "tokenize: no input"          $TOK -m $M
run_err "tokenize: missing file"      $TOK -m $M -f "$W/nonexistent.txt"
run_err "tokenize: -f without value"  $TOK -m $M -f
run_err "tokenize: missing model"     $TOK -m "$W/nonexistent.tfm" hello
run_err "decode: id = n_tokens"       $TOK -m $M --decode "1 300"
run_err "decode: negative id"         $TOK -m $M --decode "1 -2"
run_err "decode: not an id"           $TOK -m $M --decode "1 2x 3"

# tokenizer test vectors of Hugging Face tokenizers, through vocab-only files
vectors() { # NAME SRC VECTORS: every 4th line of the vectors; ids and the --decode round trip
  if [ ! -e "$2" ] || [ ! -f "$3" ]; then echo "SKIP: $2 or $3 missing (SHARED=$SHARED)"; return; fi
  run_ok "tfm-convert --vocab-only $1" $CONV --vocab-only "$2" -o "$W/$1-vocab.tfm" || return
  mv -f "$W/$1-vocab.tfm" "build/$1-vocab.tfm" && eval "have_$1=1"
  i=0 bad_ids=0 bad_rt=0
  while IFS= read -r line; do
    i=$((i + 1)); [ $((i % 4)) -eq 1 ] || continue
    text=${line% => *} want=$(echo "${line##* => }" | tr ',' ' ')
    printf '%s' "$text" >"$W/text"
    got=$($TOK -m "build/$1-vocab.tfm" -f "$W/text" 2>"$W/err")
    [ "$got" = "$want" ] || { bad_ids=$((bad_ids + 1)); echo "    $1 line $i: $got, want $want"; }
    $TOK -m "build/$1-vocab.tfm" --decode "$want" >"$W/decoded" 2>"$W/err" &&
      cmp -s "$W/text" "$W/decoded" || { bad_rt=$((bad_rt + 1)); echo "    $1 line $i: decode differs"; }
  done <"$3"
  check "$1: ids equal the Hugging Face vectors ($bad_ids of 25 differ)" [ "$bad_ids" -eq 0 ]
  check "$1: --decode round-trips ($bad_rt of 25 differ)" [ "$bad_rt" -eq 0 ]
}
have_gpt2=0
vectors gpt2 "$SHARED/tokenizers/gpt2" "$SHARED/tokenizers/vectors/gpt-2.txt"
vectors neox "$SHARED/tokenizers/gpt-neox-20b" "$SHARED/tokenizers/vectors/gpt-neox.txt"
if [ "$have_gpt2" = 1 ]; then
  run_ok "tokenize TEXT argument" $TOK -m build/gpt2-vocab.tfm "Hello World!"
  check "gpt2: Hello World! = 15496 2159 0" [ "$(cat "$W/out")" = "15496 2159 0" ]
  run_ok "tokenize TEXT after --" $TOK -m build/gpt2-vocab.tfm -- "-x"
  check "gpt2: -x = 12, 87" [ "$(cat "$W/out")" = "12 87" ]
  run_ok "decode ids over lines" $TOK -m build/gpt2-vocab.tfm --decode "$(printf '15496,\n2159 \n0')"
  check "gpt2: decode = Hello World!" [ "$(cat "$W/out")" = "Hello World!" ]
  run_err "generate: vocab-only file" $GEN -m build/gpt2-vocab.tfm -p hi
  run_err "perplexity: vocab-only file" $PPL -m build/gpt2-vocab.tfm -f $DATA/neox_tok/text.txt
fi

# --- tfm-perplexity -------------------------------------------------------------------------------
TXT=$DATA/neox_tok/text.txt
IDS=$(cat $DATA/neox_tok/tokens.txt)
run_ok "perplexity, default window" $PPL -m $M -f $TXT -t 1
check "perplexity prints tokens: 35" grep -qx 'tokens: 35' "$W/out"
check "perplexity prints windows: 1" grep -qx 'windows: 1' "$W/out"
check "perplexity prints cross-entropy with 6 decimals" \
  grep -Eqx 'cross-entropy: [0-9]+\.[0-9]{6} nats/token' "$W/out"
check "perplexity prints perplexity" grep -Eqx 'perplexity: [0-9.]+' "$W/out"
ce=$(sed -n 's/^cross-entropy: \([0-9.]*\) .*/\1/p' "$W/out")
ppl=$(sed -n 's/^perplexity: //p' "$W/out")
check "perplexity = exp(cross-entropy)" \
  awk -v c="$ce" -v p="$ppl" 'BEGIN {r = p / exp(c); exit !(r > 0.9999 && r < 1.0001)}'
set -- $(ref_ce_sum $DATA/neox_tok/logits.f32 320 "$IDS")
want=$(awk -v s="$1" -v n="$2" 'BEGIN {printf "%.6f", s / n}')
check_near "perplexity, one window: cross-entropy vs golden logits" "$ce" "$want" 2e-4
# --ctx 8: windows of 8, 8, 8, 8, 3 tokens, each from position 0; recomputed from dumped logits
run_ok "perplexity, --ctx 8" $PPL -m $M -f $TXT --ctx 8 -t 2
check "--ctx 8: windows: 5" grep -qx 'windows: 5' "$W/out"
ce8=$(sed -n 's/^cross-entropy: \([0-9.]*\) .*/\1/p' "$W/out")
sum=0 cnt=0 w=0
while [ $w -lt 5 ]; do
  win=$(echo $IDS | cut -d' ' -f$((w * 8 + 1))-$((w * 8 + 8)))
  $GEN -m $M --tokens "$(echo $win | tr ' ' ',')" -n 0 -t 1 --dump-logits "$W/win.f32" >/dev/null 2>&1
  set -- $(ref_ce_sum "$W/win.f32" 320 "$win")
  sum=$(awk -v a="$sum" -v b="$1" 'BEGIN {printf "%.9f", a + b}'); cnt=$((cnt + $2)); w=$((w + 1))
done
want=$(awk -v s="$sum" -v n="$cnt" 'BEGIN {printf "%.6f", s / n}')
check "--ctx 8: $cnt predictions scored (30)" [ "$cnt" -eq 30 ]
check_near "perplexity --ctx 8: cross-entropy vs per-window recomputation" "$ce8" "$want" 2e-5
run_ok "perplexity, --ctx 34 (last window of 1 token scores nothing)" $PPL -m $M -f $TXT --ctx 34 -t 1
check "--ctx 34: windows: 2" grep -qx 'windows: 2' "$W/out"
run_err "perplexity: --ctx 1"          $PPL -m $M -f $TXT --ctx 1
run_err "perplexity: --ctx past n_ctx" $PPL -m $M -f $TXT --ctx 65
run_err "perplexity: --ctx abc"        $PPL -m $M -f $TXT --ctx abc
run_err "perplexity: -t -1"            $PPL -m $M -f $TXT -t -1
run_err "perplexity: missing -f"       $PPL -m $M
run_err "perplexity: missing file"     $PPL -m $M -f "$W/nonexistent.txt"
printf 'x' >"$W/one.txt"
run_err "perplexity: a one-token file" $PPL -m $M -f "$W/one.txt"
run_err "perplexity: no tokenizer"     $PPL -m $MP -f $TXT

# --- minimal.c ------------------------------------------------------------------------------------
if [ -x build/minimal ]; then
  run_ok "minimal on $M" build/minimal $M "The fox"
  check "minimal prints the prompt and a continuation" grep -q '^The fox.' "$W/out"
  run_err "minimal on a missing model" build/minimal "$W/nonexistent.tfm"
fi

# --- llama2.c's stories260K (Llama: RMSNorm, SwiGLU, GQA, SentencePiece with BOS) vs llama2.c ---
ST=$SHARED/models
if [ -f $ST/stories260K.bin ] && [ -f $ST/tok512.bin ] && [ -f $ST/stories260K.ref/logits.f32 ]; then
  run_ok "stories260K: convert" $CONV $ST/stories260K.bin --tokenizer $ST/tok512.bin \
    -o "$W/stories.tfm" --quiet
  # run.c's encodings start with BOS 1; tfm-tokenize adds it only with --add-special (+ EOS 2)
  tab=$(printf '\t')
  while IFS=$tab read -r text ids; do
    run_ok "stories260K: tokenize '$text'" $TOK -m "$W/stories.tfm" -- "$text"
    check "stories260K: '$text' = run.c's ids after BOS" [ "1 $(cat "$W/out")" = "$ids" ]
    run_ok "stories260K: --add-special '$text'" $TOK -m "$W/stories.tfm" --add-special -- "$text"
    check "stories260K: --add-special = BOS ids EOS" [ "$(cat "$W/out")" = "$ids 2" ]
  done <$ST/stories260K.ref/encode.txt
  # -p puts BOS first (the model asks for it): 5 prompt + 64 generated rows = run.c's logits
  run_ok "stories260K: greedy, dump" $GEN -m "$W/stories.tfm" -p "Once upon a time" -n 64 \
    --temp 0 -t 2 --dump-logits "$W/stories.f32"
  check "stories260K: 69 x 512 logits dumped" [ "$(fsize "$W/stories.f32")" -eq $((69 * 512 * 4)) ]
  d=$(maxdiff "$W/stories.f32" $ST/stories260K.ref/logits.f32)
  check_near "stories260K: logits vs llama2.c (relative)" "$d" 0 1e-4
  # run.c -n 200 counts positions from BOS: it prints 200 - (prompt tokens) generated tokens
  for ref in once_upon_a_time:"Once upon a time" lily_wanted:"Lily wanted"; do
    file=$ST/stories260K.ref/greedy_${ref%%:*}.txt prompt=${ref#*:}
    n=$((200 - $($TOK -m "$W/stories.tfm" -- "$prompt" | wc -w)))
    run_ok "stories260K: greedy '$prompt' -n $n" $GEN -m "$W/stories.tfm" -p "$prompt" -n $n \
      --temp 0 -t 1
    check "stories260K: greedy '$prompt' text = llama2.c's" cmp -s "$W/out" "$file"
  done
  # perplexity puts BOS first for this model: 5 tokens, 4 predictions scored by run.c's logits
  printf 'Once upon a time' >"$W/once.txt"
  run_ok "stories260K: perplexity" $PPL -m "$W/stories.tfm" -f "$W/once.txt" -t 1
  check "stories260K: tokens: 5 (BOS first)" grep -qx 'tokens: 5' "$W/out"
  ce=$(sed -n 's/^cross-entropy: \([0-9.]*\) .*/\1/p' "$W/out")
  set -- $(ref_ce_sum $ST/stories260K.ref/logits.f32 512 "1 403 407 261 378")
  want=$(awk -v s="$1" -v n="$2" 'BEGIN {printf "%.6f", s / n}')
  check_near "stories260K: cross-entropy vs llama2.c logits" "$ce" "$want" 1e-4
  run_ok "stories260K: minimal" build/minimal "$W/stories.tfm" "Once upon a time"
  check "stories260K: minimal continues the prompt" grep -q '^Once upon a time.' "$W/out"
else
  echo "SKIP: $ST/stories260K.bin, tok512.bin or stories260K.ref missing (SHARED=$SHARED)"
fi

# --- the demo model, when it has been built -------------------------------------------------------
if [ -f build/demo.tfm ]; then
  run_ok "demo: generate" $GEN -m build/demo.tfm -p "In the beginning" -n 16 --seed 1 -t 1
  check "demo: output continues the prompt" grep -q '^In the beginning' "$W/out"
  run_ok "demo: minimal" build/minimal build/demo.tfm "And God said"
  REF=models/demo/reference # written by models/demo/train_demo.py with a float64 forward
  if [ -f $REF/heldout_ce.txt ] && [ -f $REF/prompt_tokens.txt ] && [ -f $REF/logits.f32 ]; then
    run_ok "demo: tokenize the reference prompt" $TOK -m build/demo.tfm -f $REF/prompt.txt
    check "demo: prompt ids equal prompt_tokens.txt" \
      [ "$(cat "$W/out")" = "$(cat $REF/prompt_tokens.txt)" ]
    run_ok "demo: dump the prompt logits" $GEN -m build/demo.tfm -t 1 -n 0 \
      --tokens "$(tr ' ' ',' <$REF/prompt_tokens.txt)" --dump-logits "$W/demo.f32"
    d=$(maxdiff "$W/demo.f32" $REF/logits.f32)
    check_near "demo: prompt logits vs float64 reference (relative)" "$d" 0 1e-4
    run_ok "demo: perplexity --ctx 64" $PPL -m build/demo.tfm -f $REF/heldout.txt --ctx 64 -t 1
    ce=$(sed -n 's/^cross-entropy: \([0-9.]*\) .*/\1/p' "$W/out")
    check_near "demo: held-out cross-entropy (--ctx 64) vs reference" "$ce" \
      "$(cat $REF/heldout_ce.txt)" 1e-4
  fi
else
  echo "SKIP: build/demo.tfm missing (make demo); demo model not tested"
fi

echo "test_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || { echo "(outputs kept in $W)"; exit 1; }
rm -rf "$W"
