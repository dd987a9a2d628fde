#!/bin/sh
# Side by side: llama-bench and tfm-bench on the same GGUF files, back to back, per type and
# thread count; prints both and the ratios (tfm.h / llama.cpp).
# usage: tools/side_by_side.sh LLAMA_BENCH GGUF_DIR [types] [threads] [prompt] [decode]
#   GGUF_DIR holds SHAPE-TYPE.gguf (../shared/bench/peer-setup.sh writes them; SHAPE=pythia410m
#   unless set, e.g. SHAPE=pythia160m); each is converted once to build/side/SHAPE-TYPE.tfm.
#   e.g. tools/side_by_side.sh ../llama.cpp/build/bin/llama-bench ../peer-models "q8_0 q4_0" "1 2"
#   Both engines cache keys and values in f16 (llama.cpp's default); KV=f32 runs tfm.h with its
#   own default, an f32 cache (twice the bytes attention reads per decoded token).
#   KERNELS=S runs tfm.h's kernel set S (tfm-bench --kernels), e.g. avx2 against a llama.cpp
#   built for AVX2 only, on the same machine.
#   MMAP=0 reads each file into memory on both sides (llama-bench -mmp 0, tfm-bench --no-mmap):
#   where reading a mapped file's pages runs slow or erratic (seen in a VM whose host reclaims
#   idle page cache: 2-27 GB/s from pass to pass on the same mapped file, a steady 25 GB/s once
#   copied into the process), the mapped runs measure the host, not the engines.
#   PAIRS=N (3 unless set) runs the two engines N times in turn for each line (each run the
#   median of 3 repetitions): the machine's speed drifts, and a ratio is only fair between runs
#   close together. Each line prints the median tokens/s of either engine over the pairs and the
#   median ratio with the range of the N pair ratios.
set -eu
L=${1:?usage: side_by_side.sh LLAMA_BENCH GGUF_DIR [types] [threads] [prompt] [decode]}
D=${2:?GGUF_DIR}
TYPES=${3:-"f32 f16 q8_0 q4_0 q4_k_m"}; THREADS=${4:-"1 2"}; P=${5:-128}; N=${6:-32}
B=${BIN:-build}; S=${SHAPE:-pythia410m}; KV=${KV:-f16}; PAIRS=${PAIRS:-3}; K=${KERNELS:-}
MMP=1; NM=""; [ "${MMAP:-1}" = 0 ] && MMP=0 && NM=--no-mmap
mkdir -p build/side
for ty in $TYPES; do
  g=$D/$S-$ty.gguf; t=build/side/$S-$ty.tfm
  [ -f "$t" ] || "$B/tfm-convert" "$g" -o "$t" > /dev/null
  for th in $THREADS; do
    i=0; runs=""
    while [ "$i" -lt "$PAIRS" ]; do
      l=$("$L" -m "$g" -p "$P" -n "$N" -t "$th" -r 3 -mmp "$MMP" -o csv 2>/dev/null |
          awk -F, 'NR > 1 { gsub("\"", "", $0); print $(NF - 1) }' | tr '\n' ' ')
      f=$("$B/tfm-bench" -m "$t" -p "$P" -n "$N" -t "$th" -r 3 --kv "$KV" $NM ${K:+--kernels "$K"} 2>&1 | awk '/prompt/ { p = $4 } /decode/ { d = $4 } END { print p, d }')
      runs="$runs$l $f
"
      i=$((i + 1))
    done
    printf '%s' "$runs" | awk -v ty="$ty" -v th="$th" '
      function median(a, n,   i, j, t) {
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      }
      NF == 4 && $1 > 0 && $2 > 0 { n++; lp[n] = $1; ld[n] = $2; fp[n] = $3; fd[n] = $4; rp[n] = $3 / $1; rd[n] = $4 / $2 }
      END {
        if (!n) { printf "%-7s t=%s  no complete pair of runs\n", ty, th; exit 1 }
        mp = median(rp, n); md = median(rd, n) # sorted now: [1] the least, [n] the most
        printf "%-7s t=%s  llama.cpp prompt %7.1f decode %6.2f | tfm.h prompt %7.1f decode %6.2f", ty, th,
               median(lp, n), median(ld, n), median(fp, n), median(fd, n)
        printf " | ratio prompt %.2f (%.2f-%.2f) decode %.2f (%.2f-%.2f)\n", mp, rp[1], rp[n], md, rd[1], rd[n]
      }'
  done
done
