#!/usr/bin/python3
"""make_modern_gguf.py - random-weight GGUF files of the small models people pick today, for
side-by-side speed runs against llama.cpp (tools/side_by_side.sh) on their shapes.

    /usr/bin/python3 tools/make_modern_gguf.py LLAMA_CPP_DIR OUT_DIR [SHAPE ...]
    SHAPE=qwen05b tools/side_by_side.sh LLAMA_CPP_DIR/build/bin/llama-bench OUT_DIR "q8_0 q4_0 q4_k_m q5_k_m"

Shapes (default: both):
  qwen05b  Qwen2.5-0.5B: qwen2, 24 layers, d_model 896, 14 heads, 2 kv heads, d_ff 4864,
           vocab 151936, q/k/v biases, tied embeddings
  llama1b  Llama-3.2-1B: llama, 16 layers, d_model 2048, 32 heads, 8 kv heads, d_ff 8192,
           vocab 128256, tied embeddings (no llama3 rope scaling: it changes no speed)
Writes OUT_DIR/SHAPE-f16.gguf with llama.cpp's own gguf-py (LLAMA_CPP_DIR/gguf-py), then
SHAPE-q8_0, -q4_0, -q4_k_m and -q5_k_m.gguf with its llama-quantize (LLAMA_CPP_DIR/build/bin), as
../shared/bench/peer-setup.sh does for the Pythia shapes. Weights ~N(0, 0.02) in f16 (seed
1234), norms 1 and biases 0 in f32. The vocabulary is GPT-2's byte-level BPE from
../shared/tokenizers/gpt2 (<|endoftext|> as bos and eos), padded with unused "<pad_N>" tokens
to the shape's vocab size: the speed depends on the size, not on the tokens. d_model 896 is
not a multiple of 256, so llama-quantize writes Qwen's Q4_K_M matrices mostly as Q5_0 and its
Q5_K_M ones as Q5_1 (as in the real Qwen2.5-0.5B files). Nothing here goes into the
repository."""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "..", "..", "shared", "tokenizers", "gpt2")
QUANTS = ("q8_0", "q4_0", "q4_k_m", "q5_k_m")

# arch, layers, d_model, heads, kv heads, d_ff, vocab, n_ctx, rope theta, rms eps, qkv biases, pre-tokenizer
SHAPES = {
    "qwen05b": ("qwen2", 24, 896, 14, 2, 4864, 151936, 4096, 1000000.0, 1e-6, True, "qwen2"),
    "llama1b": ("llama", 16, 2048, 32, 8, 8192, 128256, 4096, 500000.0, 1e-5, False, "llama-bpe"),
}


def load_vocab(gguf, n_vocab):
    """GPT-2's tokens and merges, padded to n_vocab; returns (tokens, types, merges, eot id)."""
    with open(os.path.join(TOKENIZER, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    toks = [None] * n_vocab
    types = [gguf.TokenType.NORMAL] * n_vocab
    for s, i in vocab.items():
        toks[i] = s
    eot = vocab["<|endoftext|>"]
    types[eot] = gguf.TokenType.CONTROL
    for i in range(n_vocab):
        if toks[i] is None:
            toks[i] = "<pad_%d>" % i
            types[i] = gguf.TokenType.UNUSED
    with open(os.path.join(TOKENIZER, "merges.txt"), encoding="utf-8") as f:
        merges = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#version")]
    return toks, types, merges, eot


def write_f16(gguf, path, shape):
    arch, n_layer, d, n_head, n_kv, d_ff, n_vocab, n_ctx, theta, eps, qkv_bias, pre = SHAPES[shape]
    kv_dim = d // n_head * n_kv
    toks, types, merges, eot = load_vocab(gguf, n_vocab)
    rng = np.random.default_rng(1234)

    def mat(rows, cols):  # [rows, cols] f16, made in chunks of 16M floats to keep memory modest
        m = np.empty((rows, cols), np.float16)
        step = max(1, (1 << 24) // cols)
        for i in range(0, rows, step):
            n = min(step, rows - i)
            m[i:i + n] = rng.standard_normal((n, cols), dtype=np.float32) * 0.02
        return m

    w = gguf.GGUFWriter(path, arch)
    w.add_name(shape + "-random")
    w.add_context_length(n_ctx)
    w.add_embedding_length(d)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(d_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(eps)
    if arch == "llama":
        w.add_rope_dimension_count(d // n_head)
        w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot)
    w.add_add_bos_token(False)
    ones = np.ones(d, np.float32)
    w.add_tensor("token_embd.weight", mat(n_vocab, d))  # tied: also the output head
    for i in range(n_layer):
        p = "blk.%d." % i
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "attn_q.weight", mat(d, d))
        w.add_tensor(p + "attn_k.weight", mat(kv_dim, d))
        w.add_tensor(p + "attn_v.weight", mat(kv_dim, d))
        if qkv_bias:
            w.add_tensor(p + "attn_q.bias", np.zeros(d, np.float32))
            w.add_tensor(p + "attn_k.bias", np.zeros(kv_dim, np.float32))
            w.add_tensor(p + "attn_v.bias", np.zeros(kv_dim, np.float32))
        w.add_tensor(p + "attn_output.weight", mat(d, d))
        w.add_tensor(p + "ffn_norm.weight", ones)
        w.add_tensor(p + "ffn_gate.weight", mat(d_ff, d))
        w.add_tensor(p + "ffn_up.weight", mat(d_ff, d))
        w.add_tensor(p + "ffn_down.weight", mat(d, d_ff))
    w.add_tensor("output_norm.weight", ones)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    llama, out = sys.argv[1], sys.argv[2]
    shapes = sys.argv[3:] or list(SHAPES)
    for s in shapes:
        if s not in SHAPES:
            sys.exit("make_modern_gguf.py: unknown shape %s (known: %s)" % (s, " ".join(SHAPES)))
    sys.path.insert(0, os.path.join(llama, "gguf-py"))
    import gguf
    quantize = os.path.join(llama, "build", "bin", "llama-quantize")
    os.makedirs(out, exist_ok=True)
    for s in shapes:
        f16 = os.path.join(out, "%s-f16.gguf" % s)
        print("writing", f16, flush=True)
        write_f16(gguf, f16, s)
        for q in QUANTS:
            dst = os.path.join(out, "%s-%s.gguf" % (s, q))
            print("quantizing", dst, flush=True)
            subprocess.run([quantize, f16, dst, q.upper()], check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
