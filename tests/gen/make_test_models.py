#!/usr/bin/python3
"""make_test_models.py - writes the tiny GPT-NeoX golden checkpoints in tests/data/models/.

    /usr/bin/python3 tests/gen/make_test_models.py [--out tests/data/models] [--check]
    /usr/bin/python3 tests/gen/make_test_models.py --validate-tokenizer ../shared

For each variant NAME it writes tests/data/models/NAME/ in exact Hugging Face layout:
config.json, model.safetensors (or two shards + model.safetensors.index.json), tokens.txt (the
token ids to run), logits.f32 (little-endian float32 [n_positions, vocab_size] from the float64
reference tests/gen/ref_gpt_neox.py, run on the checkpoint as written, i.e. after f16/bf16 rounding),
and for neox_tok a tokenizer.json plus text.txt (tokens.txt is its tokenization).
Everything is deterministic (fixed numpy seeds; no network, no Hugging Face libraries: the
safetensors writer and the byte-level BPE below are written here).
--validate-tokenizer SHARED checks this file's BPE encoder against Hugging Face's own output for
the real GPT-NeoX-20B tokenizer (SHARED = the read-only shared folder, e.g. ../shared).
--check re-reads every folder, recomputes the logits and also prints the difference that f16
weight storage (what tfm-convert --type f16 does to matrices) makes, for the README's bounds.
"""
import json
import os
import struct
import sys
import unicodedata

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_gpt_neox as ref  # noqa: E402

# ---------------------------------------------------------------------------------------------
# safetensors writer: u64 LE header length, JSON header padded with spaces to a multiple of 8,
# then the tensors back to back (offsets relative to the buffer, end exclusive).

_ST_DTYPE = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "BOOL": ("u1", 1)}


def to_bf16_bits(a):
    """float64 -> bf16 bit patterns (uint16), round to nearest even via f32."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def encode(dtype, a):
    a = np.asarray(a)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    if dtype == "BF16":
        return to_bf16_bits(a).astype("<u2").tobytes()
    if dtype == "BOOL":
        return a.astype(np.uint8).tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, ndarray) in file order."""
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, dtype, a in tensors:
        raw = encode(dtype, a)
        header[name] = {"dtype": dtype, "shape": list(np.shape(a)), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
    return offset  # data bytes


# ---------------------------------------------------------------------------------------------
# Weights. Matrices ~N(0, 0.2) so that logits are O(1..10); LayerNorm weights 1 + N(0, 0.1);
# every bias N(0, 0.1) (nonzero, so a dropped bias shows).


def make_weights(rng, d_model, n_layers, d_ff, n_vocab, tied):
    def mat(rows, cols):
        return rng.normal(0.0, 0.2, size=(rows, cols))

    def vec(n):
        return rng.normal(0.0, 0.1, size=n)

    w = [("gpt_neox.embed_in.weight", mat(n_vocab, d_model))]
    for i in range(n_layers):
        p = "gpt_neox.layers.%d." % i
        w += [
            (p + "input_layernorm.weight", 1.0 + vec(d_model)),
            (p + "input_layernorm.bias", vec(d_model)),
            (p + "post_attention_layernorm.weight", 1.0 + vec(d_model)),
            (p + "post_attention_layernorm.bias", vec(d_model)),
            (p + "attention.query_key_value.weight", mat(3 * d_model, d_model)),
            (p + "attention.query_key_value.bias", vec(3 * d_model)),
            (p + "attention.dense.weight", mat(d_model, d_model)),
            (p + "attention.dense.bias", vec(d_model)),
            (p + "mlp.dense_h_to_4h.weight", mat(d_ff, d_model)),
            (p + "mlp.dense_h_to_4h.bias", vec(d_ff)),
            (p + "mlp.dense_4h_to_h.weight", mat(d_model, d_ff)),
            (p + "mlp.dense_4h_to_h.bias", vec(d_model)),
        ]
    w += [("gpt_neox.final_layer_norm.weight", 1.0 + vec(d_model)),
          ("gpt_neox.final_layer_norm.bias", vec(d_model))]
    if not tied:
        w.append(("embed_out.weight", mat(n_vocab, d_model)))
    return w


def old_buffers(n_layers, n_ctx, rotary_ndims, base):
    """The non-persistent buffers that old GPT-NeoX checkpoints carry; a converter must skip them."""
    out = []
    for i in range(n_layers):
        p = "gpt_neox.layers.%d.attention." % i
        out.append((p + "bias", "BOOL", np.tril(np.ones((1, 1, n_ctx, n_ctx), dtype=bool))))
        out.append((p + "masked_bias", "F32", np.array(-1e9)))
        inv_freq = 1.0 / base ** (np.arange(0, rotary_ndims, 2, dtype=np.float64) / rotary_ndims)
        out.append((p + "rotary_emb.inv_freq", "F32", inv_freq))
    return out


def base_config(v, torch_dtype):
    return {
        "architectures": ["GPTNeoXForCausalLM"],
        "model_type": "gpt_neox",
        "attention_bias": True,
        "attention_dropout": 0.0,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "classifier_dropout": 0.1,
        "hidden_act": v["act"],
        "hidden_dropout": 0.0,
        "hidden_size": v["d_model"],
        "initializer_range": 0.02,
        "intermediate_size": v["d_ff"],
        "layer_norm_eps": v["eps"],
        "max_position_embeddings": v["n_ctx"],
        "num_attention_heads": v["n_heads"],
        "num_hidden_layers": v["n_layers"],
        "tie_word_embeddings": v["tied"],
        "torch_dtype": torch_dtype,
        "transformers_version": "4.40.0",
        "use_cache": True,
        "use_parallel_residual": v["parallel"],
        "vocab_size": v["n_vocab"],
    }


# ---------------------------------------------------------------------------------------------
# A tiny byte-level BPE in tokenizer.json form, trained and applied here (GPT-2 alphabet, GPT-2
# pre-tokenizer split, NFC normalizer, added tokens matched before splitting).


def bytes_to_unicode():
    """byte -> printable char: 33..126, 161..172, 174..255 map to themselves, the other 68 bytes
    to U+0100.. in increasing byte order (so space -> U+0120 'G dot')."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _cls(ch):
    if ch.isspace():
        return "s"
    if unicodedata.category(ch).startswith("L"):
        return "L"
    if unicodedata.category(ch).startswith("N"):
        return "N"
    return "P"


def gpt2_split(text):
    """The GPT-2 pattern 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
    as a scanner (Python's re has no \\p classes)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] == "'":
            hit = next((c for c in ("s", "t", "re", "ve", "m", "ll", "d") if text.startswith(c, i + 1)), None)
            if hit:
                out.append(text[i:i + 1 + len(hit)])
                i += 1 + len(hit)
                continue
        j = i + 1 if (text[i] == " " and i + 1 < n and _cls(text[i + 1]) != "s") else i
        c = _cls(text[j])
        if c != "s":  # ' ?' then a run of one class
            k = j + 1
            while k < n and _cls(text[k]) == c:
                k += 1
            out.append(text[i:k])
            i = k
            continue
        k = i  # whitespace run: keep the last one for the next word unless at the end
        while k < n and _cls(text[k]) == "s":
            k += 1
        if k < n and k - i > 1:
            k -= 1
        out.append(text[i:k])
        i = k
    return out


def train_merges(text, n_merges):
    b2u = bytes_to_unicode()
    words = {}
    for piece in gpt2_split(unicodedata.normalize("NFC", text)):
        key = tuple(b2u[b] for b in piece.encode("utf-8"))
        words[key] = words.get(key, 0) + 1
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for word, count in words.items():
            for a, b in zip(word, word[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))  # most frequent, ties by text
        merges.append(best)
        merged = {}
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + count
        words = merged
    return merges


def bpe_word(chars, ranks):
    """GPT-2 bpe(): merge the lowest-ranked adjacent pair everywhere, left to right, repeat."""
    word = list(chars)
    while len(word) > 1:
        pairs = [(ranks.get((a, b), 1 << 30), (a, b)) for a, b in zip(word, word[1:])]
        rank, best = min(pairs)
        if rank == 1 << 30:
            break
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        word = out
    return word


class ByteBPE:
    def __init__(self, merges, specials, spaces):
        b2u = bytes_to_unicode()
        self.b2u = b2u
        self.added = []  # (content, id, special)
        vocab = {}
        for s in specials:
            vocab[s] = len(vocab)
            self.added.append((s, vocab[s], True))
        order = sorted(range(256), key=lambda b: ord(b2u[b]))  # alphabet order, as GPT-2/NeoX
        for b in order:
            vocab[b2u[b]] = len(vocab)
        for a, b in merges:
            vocab[a + b] = len(vocab)
        self.vocab = vocab
        self.merges = merges
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.n_tokens = len(vocab) + len(spaces)
        for i, s in enumerate(spaces):  # whitespace-run added tokens sit past the BPE vocab
            self.added.append((s, len(vocab) + i, False))

    def _split_added(self, text):
        """[(piece, added_id or None)]: leftmost-longest matches of the added tokens."""
        out, i, start = [], 0, 0
        while i < len(text):
            hits = [(len(c), tid) for c, tid, _ in self.added if text.startswith(c, i)]
            if hits:
                length, tid = max(hits)
                if start < i:
                    out.append((text[start:i], None))
                out.append((text[i:i + length], tid))
                i += length
                start = i
            else:
                i += 1
        if start < len(text):
            out.append((text[start:], None))
        return out

    def encode(self, text):
        ids = []
        for piece, tid in self._split_added(unicodedata.normalize("NFC", text)):
            if tid is not None:
                ids.append(tid)
                continue
            for word in gpt2_split(piece):
                chars = [self.b2u[b] for b in word.encode("utf-8")]
                ids += [self.vocab[t] for t in bpe_word(chars, self.ranks)]
        return ids

    def to_json(self):
        added = [{"id": tid, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": not special, "special": special} for c, tid, special in self.added]
        byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added,
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": byte_level,
            "post_processor": byte_level,
            "decoder": byte_level,
            "model": {
                "type": "BPE",
                "dropout": None,
                "unk_token": None,
                "continuing_subword_prefix": None,
                "end_of_word_suffix": None,
                "fuse_unk": False,
                "byte_fallback": False,
                "ignore_merges": False,
                "vocab": self.vocab,
                "merges": [a + " " + b for a, b in self.merges],
            },
        }


TRAIN_TEXT = ("the quick brown fox jumps over the lazy dog, and the other foxes watch the dogs; "
              "the dog sleeps while the fox runs over the hill and back to the den.")
# Exercises: NFC (e + combining acute -> one code point, 2 bytes), a contraction, digits, a
# 3-space and a 2-space run (added tokens), a newline, <|endoftext|> inside the text.
TOK_TEXT = "The fox's den: 2026 foxes, cafe\u0301!\n   the dog  ran<|endoftext|>the end"

# ---------------------------------------------------------------------------------------------
# Variants.

VARIANTS = [
    # a) parallel residual, legacy rotary keys, untied, F32, exact GELU, old buffers to skip
    dict(name="neox_par", seed=1001, d_model=64, n_heads=4, n_layers=2, d_ff=256, n_vocab=160, n_ctx=64,
         eps=1e-5, act="gelu", parallel=True, tied=False, dtype="F32", rope="legacy", rotary_pct=0.25,
         rope_base=10000.0, buffers=True, shards=1, n_tokens=28),
    # b) sequential residual, rope_parameters dict only, tied head, F16 source
    dict(name="neox_seq", seed=2002, d_model=64, n_heads=4, n_layers=3, d_ff=256, n_vocab=136, n_ctx=64,
         eps=1e-6, act="gelu", parallel=False, tied=True, dtype="F16", rope="dict", rotary_pct=0.5,
         rope_base=500.0, buffers=False, shards=1, n_tokens=30),
    # c) two shards + index, BF16 source, tanh GELU, parallel, full rotary, untied
    dict(name="neox_shard", seed=3003, d_model=64, n_heads=4, n_layers=2, d_ff=256, n_vocab=112, n_ctx=64,
         eps=1e-5, act="gelu_new", parallel=True, tied=False, dtype="BF16", rope="legacy", rotary_pct=1.0,
         rope_base=10000.0, buffers=False, shards=2, n_tokens=24),
    # d) like a) but d_model 32 with a byte-level BPE tokenizer.json; tokens.txt = tokenize(text.txt)
    dict(name="neox_tok", seed=4004, d_model=32, n_heads=4, n_layers=2, d_ff=128, n_vocab=320, n_ctx=64,
         eps=1e-5, act="gelu", parallel=True, tied=False, dtype="F32", rope="legacy", rotary_pct=0.25,
         rope_base=10000.0, buffers=True, shards=1, tokenizer=True),
]

TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


def make_variant(out_root, v):
    folder = os.path.join(out_root, v["name"])
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):  # start clean (a variant may change from one file to shards)
        os.remove(os.path.join(folder, f))
    rng = np.random.default_rng(v["seed"])
    d_head = v["d_model"] // v["n_heads"]
    rotary_ndims = int(d_head * v["rotary_pct"])

    cfg = base_config(v, TORCH_DTYPE[v["dtype"]])
    if v["rope"] == "legacy":
        cfg["rotary_pct"] = v["rotary_pct"]
        cfg["rotary_emb_base"] = v["rope_base"]
        cfg["rope_scaling"] = None
    else:
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": v["rope_base"],
                                  "partial_rotary_factor": v["rotary_pct"]}
        cfg["transformers_version"] = "5.0.0"
        cfg["dtype"] = cfg.pop("torch_dtype")

    weights = make_weights(rng, v["d_model"], v["n_layers"], v["d_ff"], v["n_vocab"], v["tied"])
    tensors = [(name, v["dtype"], a) for name, a in weights]
    if v["buffers"]:
        tensors += old_buffers(v["n_layers"], v["n_ctx"], rotary_ndims, v["rope_base"])

    if v.get("tokenizer"):
        tok = ByteBPE(train_merges(TRAIN_TEXT, 40), ["<|endoftext|>", "<|padding|>"], ["   ", "  "])
        assert tok.n_tokens <= v["n_vocab"]
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok.to_json(), f, ensure_ascii=False, indent=1)
        with open(os.path.join(folder, "text.txt"), "wb") as f:
            f.write(TOK_TEXT.encode("utf-8"))  # exact bytes, no trailing newline
        ids = tok.encode(TOK_TEXT)
    else:
        ids = [int(t) for t in rng.integers(0, v["n_vocab"], size=v["n_tokens"])]
        ids[0], ids[-1] = 0, v["n_vocab"] - 1  # the first and the last (padded) row are used
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write(" ".join(str(t) for t in ids) + "\n")

    if v["shards"] == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    else:  # shard 1: embeddings and layer 0; shard 2: the rest
        first = [t for t in tensors if t[0].startswith(("gpt_neox.embed_in.", "gpt_neox.layers.0."))]
        rest = [t for t in tensors if t not in first]
        total, weight_map = 0, {}
        for k, part in enumerate((first, rest)):
            fname = "model-%05d-of-%05d.safetensors" % (k + 1, 2)
            total += write_safetensors(os.path.join(folder, fname), part)
            weight_map.update({t[0]: fname for t in part})
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2)
            f.write("\n")
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")

    logits = ref.forward(ref.load(folder), ids)  # from the files as written
    logits.astype("<f4").tofile(os.path.join(folder, "logits.f32"))
    return folder, ids, logits


def f16_matrices(model):
    """The model as tfm-convert --type f16 stores it: matrices rounded to f16, vectors kept."""
    w = {k: (a.astype(np.float16).astype(np.float64) if a.ndim == 2 else a) for k, a in model["w"].items()}
    return {"cfg": model["cfg"], "w": w}


def check(out_root):
    for v in VARIANTS:
        folder = os.path.join(out_root, v["name"])
        model = ref.load(folder)
        ids = ref.read_tokens(folder)
        cfg = model["cfg"]
        want = np.fromfile(os.path.join(folder, "logits.f32"), dtype="<f4").reshape(len(ids), cfg["n_vocab"])
        got = ref.forward(model, ids)
        d16 = np.abs(ref.forward(f16_matrices(model), ids) - got).max()
        print("%-10s T=%2d vocab=%3d |logit| max %.3f std %.3f  stored-vs-recomputed %.2e  f16-weights maxdiff %.3e"
              % (v["name"], len(ids), cfg["n_vocab"], np.abs(got).max(), got.std(),
                 np.abs(want - got).max(), d16))


def validate_tokenizer(shared):
    """Runs this file's BPE encoder with the real GPT-NeoX-20B tokenizer.json over the test
    vectors made by Hugging Face tokenizers (shared/tokenizers/vectors/gpt-neox.txt)."""
    with open(os.path.join(shared, "tokenizers/gpt-neox-20b/tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    tok = ByteBPE.__new__(ByteBPE)
    tok.b2u = bytes_to_unicode()
    tok.vocab = tj["model"]["vocab"]
    tok.ranks = {tuple(m.split(" ") if isinstance(m, str) else m): i for i, m in enumerate(tj["model"]["merges"])}
    tok.added = [(a["content"], a["id"], a["special"]) for a in tj["added_tokens"]]
    n_ok = n_bad = 0
    with open(os.path.join(shared, "tokenizers/vectors/gpt-neox.txt"), encoding="utf-8") as f:
        for line in f:
            text, _, ids = line.rstrip("\n").rpartition(" => ")
            want = [int(x) for x in ids.split(",")] if ids else []
            if tok.encode(text) == want:
                n_ok += 1
            else:
                n_bad += 1
                print("MISMATCH %r: %s != %s" % (text, tok.encode(text), want))
    print("GPT-NeoX-20B vectors: %d match, %d differ" % (n_ok, n_bad))
    return 1 if n_bad else 0


def main(argv):
    if "--validate-tokenizer" in argv:
        return validate_tokenizer(argv[argv.index("--validate-tokenizer") + 1])
    out_root = "tests/data/models"
    if "--out" in argv:
        out_root = argv[argv.index("--out") + 1]
    if "--check" in argv:
        check(out_root)
        return 0
    for v in VARIANTS:
        folder, ids, logits = make_variant(out_root, v)
        print("%s: %d tokens, logits |max| %.3f" % (folder, len(ids), np.abs(logits).max()))
    check(out_root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
