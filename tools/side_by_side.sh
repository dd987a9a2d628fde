#!/bin/sh
# Side by side: llama-bench and tfm-bench on the same GGUF files, back to back, per type and
# thread count; prints both and the ratios (tfm.h / llama.cpp).
# usage: tools/side_by_side.sh LLAMA_BENCH GGUF_DIR [types] [threads] [prompt] [decode]
#   GGUF_DIR holds SHAPE-TYPE.gguf (../shared/bench/peer-setup.sh writes them; SHAPE=pythia410m
#   unless set, e.g. SHAPE=pythia160m); each is converted once to build/side/SHAPE-TYPE.tfm.
#   e.g. tools/side_by_side.sh ../llama.cpp/build/bin/llama-bench ../peer-models "q8_0 q4_0" "1 2"
#   Both engines cache keys and values in f16 (llama.cpp's default); KV=f32 runs tfm.h with its
#   own default, an f32 cache (twice the bytes attention reads per decoded token).
set -eu
L=${1:?usage: side_by_side.sh LLAMA_BENCH GGUF_DIR [types] [threads] [prompt] [decode]}
D=${2:?GGUF_DIR}
TYPES=${3:-"f32 f16 q8_0 q4_0 q4_k_m"}; THREADS=${4:-"1 2"}; P=${5:-128}; N=${6:-32}
B=${BIN:-build}; S=${SHAPE:-pythia410m}; KV=${KV:-f16}
mkdir -p build/side
for ty in $TYPES; do
  g=$D/$S-$ty.gguf; t=build/side/$S-$ty.tfm
  [ -f "$t" ] || "$B/tfm-convert" "$g" -o "$t" > /dev/null
  for th in $THREADS; do
    l=$("$L" -m "$g" -p "$P" -n "$N" -t "$th" -r 3 -o csv 2>/dev/null |
        awk -F, 'NR > 1 { gsub("\"", "", $0); print $(NF - 1) }' | tr '\n' ' ')
    f=$("$B/tfm-bench" -m "$t" -p "$P" -n "$N" -t "$th" -r 3 --kv "$KV" 2>&1 | awk '/prompt/ { p = $4 } /decode/ { d = $4 } END { print p, d }')
    echo "$ty $th $l $f" | awk '{ printf "%-7s t=%s  llama.cpp prompt %7.1f decode %6.2f | tfm.h prompt %7.1f decode %6.2f | ratio prompt %.2f decode %.2f\n", $1, $2, $3, $4, $5, $6, $5 / $3, $6 / $4 }'
  done
done
