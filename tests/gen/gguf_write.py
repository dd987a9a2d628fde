#!/usr/bin/python3
"""gguf_write.py - write GGUF v3 files the way llama.cpp's convert_hf_to_gguf.py lays them out.

Written for the tfm.h test data (tests/data/models/, tests/data/gguf/). Own code: it only follows the published GGUF
layout (ggml docs/gguf.md; /work/shared/REFERENCE.md D.1) and the tensor/metadata conventions of
llama.cpp's converter for these architectures (phi2 and starcoder2 too, see map_phi2 and
map_starcoder2; no files of those two are committed, tests/gen/check_gguf.py --extra checks them):

  gpt2     Conv1D weights ([in, out] in the checkpoint) transposed to Linear [out, in];
           c_attn stays fused as blk.N.attn_qkv (q|k|v thirds, as in the checkpoint);
           output.weight is written as a copy of token_embd.weight (the converter does that);
           position_embd stays F32 in every file type.
  llama    q_proj / k_proj rows permuted back from the Hugging Face half-split order to Meta's
           interleaved RoPE order (reshape [heads, 2, d_head/2, in] -> swap axes 1,2), k with
           num_key_value_heads; general.architecture "llama" means interleaved ("normal") RoPE.
           No output.weight when tie_word_embeddings is true.
  gptneox  query_key_value rewritten from the per-head [heads, 3, d_head] layout to q|k|v thirds
           (weight rows and bias alike); NeoX (half-split) RoPE; no rope.freq_base key (the
           converter does not write one for gptneox; llama.cpp's default is 10000).

Common rules copied from the converter's prepare_tensors: 1-D tensors, *_norm.weight, biases and
position_embd are always F32; every other 2-D ".weight" gets the file type (F32, F16 or Q8_0).
The F16 conversion is numpy astype(float16) (round to nearest even). Q8_0 is the gguf-py
reference quantizer: per 32-block d = max|x| / 127 (float32), q = round-half-away(x * (1/d)),
d stored as fp16; dequantized value = fp16(d) * q.

Tensor order follows the sorted Hugging Face names (safetensors keys() order, which the converter
walks). Dims are written reversed (ne0 = fastest = numpy's last axis). general.alignment = 32 is written
explicitly; tensor data offsets are multiples of it, each tensor is padded to it (the last too).

Usage as a tool:   gguf_write.py HF_DIR OUT.gguf [--type f32|f16|q8_0] [--tokenizer TOK]
                   gguf_write.py --vocab-only TOK OUT.gguf [--chat-template FILE]
                   gguf_write.py --quant-fixture DIR   (tests/data/gguf/quant, see quant_fixture)
                   gguf_write.py --kquant-fixture DIR  (the same with Q4_K / Q5_K / Q6_K, d_model 256)
                   gguf_write.py --from-llama2c MODEL.bin TOKENIZER.bin OUT.gguf   (see from_llama2c)
(HF_DIR = config.json + model.safetensors written by tests/gen/make_arch_models.py or
tests/gen/make_test_models.py. TOK = a byte-level BPE tokenizer.json -> tokenizer.ggml.model "gpt2",
or a llama2.c tokenizer.bin -> "llama" (SentencePiece); see tokenizer_gpt2 and
tokenizer_llama_from_llama2c. The tokenizer keys are appended after the model keys.)
"""
import json
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# metadata value types
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64 = range(13)

# ggml tensor types
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
QK8_0 = 32

# llama_ftype values (general.file_type)
FTYPE = {"f32": 0, "f16": 1, "q8_0": 7}
GGML_QUANT_VERSION = 2


# ---------------------------------------------------------------------------------------------
# quantization


def np_roundf(x):
    """Round half away from zero (C roundf), as gguf-py does."""
    a = np.abs(x)
    floored = np.floor(a)
    b = floored + np.floor(2 * (a - floored))
    return np.sign(x) * b


def quantize_q8_0(w):
    """w: float32 array, last axis a multiple of 32. Returns (raw bytes, dequantized float32)."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    assert w.shape[-1] % QK8_0 == 0, w.shape
    blocks = w.reshape(-1, QK8_0)
    d = np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)
    q = np_roundf(blocks * inv).astype(np.int8)
    d16 = d.astype(np.float16)
    raw = np.concatenate([d16.view(np.uint8), q.view(np.uint8)], axis=1)
    deq = (d16.astype(np.float32) * q.astype(np.float32)).reshape(w.shape)
    return raw.tobytes(), deq


def dequantize_q8_0(raw, shape):
    n = int(np.prod(shape))
    a = np.frombuffer(raw, dtype=np.uint8).reshape(n // QK8_0, 2 + QK8_0)
    d = a[:, :2].copy().view(np.float16).astype(np.float32)
    q = a[:, 2:].copy().view(np.int8).astype(np.float32)
    return (d * q).reshape(shape)


# ---------------------------------------------------------------------------------------------
# writer


class GGUFFile:
    def __init__(self, arch):
        self.kv = []       # (key, type, value)
        self.tensors = []  # (name, numpy shape, ggml type, raw bytes)
        self.arch = arch
        self.add("general.architecture", T_STRING, arch)

    def add(self, key, vtype, value):
        assert all(k != key for k, _, _ in self.kv), key
        self.kv.append((key, vtype, value))

    def add_tensor(self, name, shape, gtype, raw):
        assert len(name.encode()) < 64 and 1 <= len(shape) <= 4
        self.tensors.append((name, tuple(int(s) for s in shape), gtype, raw))

    @staticmethod
    def _str(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def _value(self, vtype, v):
        if vtype == T_STRING:
            return self._str(v)
        if vtype == T_ARRAY:
            etype, items = v
            out = struct.pack("<IQ", etype, len(items))
            return out + b"".join(self._value(etype, x) for x in items)
        fmt = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i",
               T_F32: "<f", T_BOOL: "<B", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}[vtype]
        return struct.pack(fmt, int(v) if vtype == T_BOOL else v)

    def to_bytes(self):
        head = bytearray()
        head += GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv))
        for key, vtype, v in self.kv:
            head += self._str(key) + struct.pack("<I", vtype) + self._value(vtype, v)
        offset = 0
        data = bytearray()
        for name, shape, gtype, raw in self.tensors:
            head += self._str(name) + struct.pack("<I", len(shape))
            for dim in reversed(shape):  # ne0 first
                head += struct.pack("<Q", dim)
            head += struct.pack("<IQ", gtype, offset)
            data += raw
            pad = (-len(raw)) % ALIGNMENT
            data += b"\0" * pad
            offset += len(raw) + pad
        head += b"\0" * ((-len(head)) % ALIGNMENT)
        return bytes(head + data)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.to_bytes())


# ---------------------------------------------------------------------------------------------
# safetensors reader (for the standalone tool and the cross-checks)


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__" or name.endswith(".attention.bias"):  # old NeoX mask buffer (BOOL)
            continue
        assert e["dtype"] == "F32", (name, e["dtype"])
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(blob[base + b:base + end], dtype="<f4").reshape(e["shape"]).copy()
    return out


# ---------------------------------------------------------------------------------------------
# Hugging Face -> GGUF mapping (what convert_hf_to_gguf.py does for these three classes)


def llama_permute(w, n_head):
    """HF half-split rows -> Meta interleaved rows, per head (LlamaModel.permute)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def llama_unpermute(w, n_head):
    """Inverse of llama_permute (Meta -> HF)."""
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def neox_qkv_to_thirds(w, n_head):
    """[heads, 3, d_head, ...] per-head fused layout -> q|k|v thirds (GPTNeoXModel.modify_tensors)."""
    rest = w.shape[1:]
    x = w.reshape(n_head, 3, w.shape[0] // n_head // 3, *rest)
    return np.concatenate([x[:, i].reshape(-1, *rest) for i in range(3)], axis=0)


def neox_thirds_to_qkv(w, n_head):
    rest = w.shape[1:]
    x = w.reshape(3, n_head, w.shape[0] // n_head // 3, *rest).swapaxes(0, 1)
    return x.reshape(w.shape)


def map_gpt2(cfg, t):
    """Returns (kv list, [(gguf name, numpy array, source HF name)])."""
    kv = [("gpt2.block_count", T_U32, cfg["n_layer"]),
          ("gpt2.context_length", T_U32, cfg.get("n_ctx", cfg["n_positions"])),
          ("gpt2.embedding_length", T_U32, cfg["n_embd"]),
          ("gpt2.feed_forward_length", T_U32, 4 * cfg["n_embd"]),
          ("gpt2.attention.head_count", T_U32, cfg["n_head"]),
          ("gpt2.attention.layer_norm_epsilon", T_F32, cfg["layer_norm_epsilon"])]
    assert cfg.get("n_inner") is None  # the converter writes 4*n_embd regardless
    p = "transformer." if "transformer.wte.weight" in t else ""
    out = [("token_embd.weight", t[p + "wte.weight"], p + "wte.weight"),
           # GPT2Model writes the tied head as a copy, right after token_embd
           ("output.weight", t[p + "wte.weight"], p + "wte.weight"),
           ("position_embd.weight", t[p + "wpe.weight"], p + "wpe.weight")]
    sub = [("ln_1.weight", "attn_norm.weight", False), ("ln_1.bias", "attn_norm.bias", False),
           ("attn.c_attn.weight", "attn_qkv.weight", True), ("attn.c_attn.bias", "attn_qkv.bias", False),
           ("attn.c_proj.weight", "attn_output.weight", True), ("attn.c_proj.bias", "attn_output.bias", False),
           ("ln_2.weight", "ffn_norm.weight", False), ("ln_2.bias", "ffn_norm.bias", False),
           ("mlp.c_fc.weight", "ffn_up.weight", True), ("mlp.c_fc.bias", "ffn_up.bias", False),
           ("mlp.c_proj.weight", "ffn_down.weight", True), ("mlp.c_proj.bias", "ffn_down.bias", False)]
    for i in range(cfg["n_layer"]):
        for hf, gg, transpose in sub:
            src = "%sh.%d.%s" % (p, i, hf)
            out.append(("blk.%d.%s" % (i, gg), np.ascontiguousarray(t[src].T) if transpose else t[src], src))
    out += [("output_norm.weight", t[p + "ln_f.weight"], p + "ln_f.weight"),
            ("output_norm.bias", t[p + "ln_f.bias"], p + "ln_f.bias")]
    return kv, out


def map_llama(cfg, t):
    n_head = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads") or n_head
    d_head = cfg.get("head_dim") or cfg["hidden_size"] // n_head
    kv = [("llama.block_count", T_U32, cfg["num_hidden_layers"]),
          ("llama.context_length", T_U32, cfg["max_position_embeddings"]),
          ("llama.embedding_length", T_U32, cfg["hidden_size"]),
          ("llama.feed_forward_length", T_U32, cfg["intermediate_size"]),
          ("llama.attention.head_count", T_U32, n_head),
          ("llama.attention.head_count_kv", T_U32, n_kv),
          ("llama.rope.freq_base", T_F32, cfg["rope_theta"]),
          ("llama.attention.layer_norm_rms_epsilon", T_F32, cfg["rms_norm_eps"])]
    if cfg.get("head_dim") is not None:  # the base class writes these when config has head_dim
        kv += [("llama.attention.key_length", T_U32, cfg["head_dim"]),
               ("llama.attention.value_length", T_U32, cfg["head_dim"])]
    kv += [("llama.vocab_size", T_U32, cfg["vocab_size"]),
           ("llama.rope.dimension_count", T_U32, d_head)]
    assert not cfg.get("attention_bias") and not cfg.get("mlp_bias")
    out = [("token_embd.weight", t["model.embed_tokens.weight"], "model.embed_tokens.weight")]
    sub = [("input_layernorm.weight", "attn_norm.weight", None),
           ("self_attn.q_proj.weight", "attn_q.weight", n_head),
           ("self_attn.k_proj.weight", "attn_k.weight", n_kv),
           ("self_attn.v_proj.weight", "attn_v.weight", None),
           ("self_attn.o_proj.weight", "attn_output.weight", None),
           ("post_attention_layernorm.weight", "ffn_norm.weight", None),
           ("mlp.gate_proj.weight", "ffn_gate.weight", None),
           ("mlp.up_proj.weight", "ffn_up.weight", None),
           ("mlp.down_proj.weight", "ffn_down.weight", None)]
    for i in range(cfg["num_hidden_layers"]):
        for hf, gg, heads in sub:
            src = "model.layers.%d.%s" % (i, hf)
            out.append(("blk.%d.%s" % (i, gg), t[src] if heads is None else llama_permute(t[src], heads), src))
    out.append(("output_norm.weight", t["model.norm.weight"], "model.norm.weight"))
    if "lm_head.weight" in t:
        out.append(("output.weight", t["lm_head.weight"], "lm_head.weight"))
    else:
        assert cfg.get("tie_word_embeddings")
    return kv, out


def map_gptneox(cfg, t):
    n_head = cfg["num_attention_heads"]
    d = cfg["hidden_size"]
    kv = [("gptneox.context_length", T_U32, cfg["max_position_embeddings"]),
          ("gptneox.embedding_length", T_U32, d),
          ("gptneox.block_count", T_U32, cfg["num_hidden_layers"]),
          ("gptneox.feed_forward_length", T_U32, cfg["intermediate_size"]),
          ("gptneox.rope.dimension_count", T_U32, int(cfg["rotary_pct"] * (d // n_head))),
          ("gptneox.attention.head_count", T_U32, n_head),
          ("gptneox.use_parallel_residual", T_BOOL, bool(cfg.get("use_parallel_residual", True))),
          ("gptneox.attention.layer_norm_epsilon", T_F32, cfg["layer_norm_eps"])]
    out = [("token_embd.weight", t["gpt_neox.embed_in.weight"], "gpt_neox.embed_in.weight")]
    sub = [("input_layernorm", "attn_norm"), ("attention.query_key_value", "attn_qkv"),
           ("attention.dense", "attn_output"), ("post_attention_layernorm", "ffn_norm"),
           ("mlp.dense_h_to_4h", "ffn_up"), ("mlp.dense_4h_to_h", "ffn_down")]
    for i in range(cfg["num_hidden_layers"]):
        for hf, gg in sub:
            for s in ("weight", "bias"):
                src = "gpt_neox.layers.%d.%s.%s" % (i, hf, s)
                a = neox_qkv_to_thirds(t[src], n_head) if gg == "attn_qkv" else t[src]
                out.append(("blk.%d.%s.%s" % (i, gg, s), a, src))
    out += [("output_norm.weight", t["gpt_neox.final_layer_norm.weight"], "gpt_neox.final_layer_norm.weight"),
            ("output_norm.bias", t["gpt_neox.final_layer_norm.bias"], "gpt_neox.final_layer_norm.bias"),
            ("output.weight", t["embed_out.weight"], "embed_out.weight")]
    return kv, out


def map_phi2(cfg, t):
    """Phi2Model: feed_forward_length is written as 4 * n_embd whatever intermediate_size says,
    rope.dimension_count = int(partial_rotary_factor * n_embd) // n_head, no rope.freq_base,
    head_count_kv = head_count; names attn_q/k/v (+bias), attn_output, ffn_up/ffn_down,
    output_norm, output.weight + output.bias; NeoX RoPE; one norm (parallel block)."""
    n_embd, n_head = cfg["hidden_size"], cfg["num_attention_heads"]
    kv = [("phi2.context_length", T_U32, cfg["max_position_embeddings"]),
          ("phi2.embedding_length", T_U32, n_embd),
          ("phi2.feed_forward_length", T_U32, 4 * n_embd),
          ("phi2.block_count", T_U32, cfg["num_hidden_layers"]),
          ("phi2.attention.head_count", T_U32, n_head),
          ("phi2.attention.head_count_kv", T_U32, n_head),
          ("phi2.attention.layer_norm_epsilon", T_F32, cfg["layer_norm_eps"]),
          ("phi2.rope.dimension_count", T_U32, int(cfg["partial_rotary_factor"] * n_embd) // n_head),
          ("tokenizer.ggml.add_bos_token", T_BOOL, False)]
    out = [("token_embd.weight", t["model.embed_tokens.weight"], "model.embed_tokens.weight")]
    sub = [("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
           ("self_attn.v_proj", "attn_v"), ("self_attn.dense", "attn_output"), ("mlp.fc1", "ffn_up"),
           ("mlp.fc2", "ffn_down")]
    for i in range(cfg["num_hidden_layers"]):
        for hf, gg in sub:
            for s in ("weight", "bias"):
                src = "model.layers.%d.%s.%s" % (i, hf, s)
                out.append(("blk.%d.%s.%s" % (i, gg, s), t[src], src))
    for hf, gg in (("model.final_layernorm", "output_norm"), ("lm_head", "output")):
        for s in ("weight", "bias"):
            out.append((gg + "." + s, t[hf + "." + s], hf + "." + s))
    return kv, out


def map_starcoder2(cfg, t):
    """StarCoder2Model: the base class keys only (no rope.dimension_count: n_rot defaults to
    d_head), layer_norm_epsilon from norm_epsilon; LayerNorm with bias; all linears with bias;
    c_fc/c_proj -> ffn_up/ffn_down; NeoX RoPE; no output.weight when tied."""
    kv = [("starcoder2.block_count", T_U32, cfg["num_hidden_layers"]),
          ("starcoder2.context_length", T_U32, cfg["max_position_embeddings"]),
          ("starcoder2.embedding_length", T_U32, cfg["hidden_size"]),
          ("starcoder2.feed_forward_length", T_U32, cfg["intermediate_size"]),
          ("starcoder2.attention.head_count", T_U32, cfg["num_attention_heads"]),
          ("starcoder2.attention.head_count_kv", T_U32, cfg["num_key_value_heads"]),
          ("starcoder2.rope.freq_base", T_F32, cfg["rope_theta"]),
          ("starcoder2.attention.layer_norm_epsilon", T_F32, cfg["norm_epsilon"])]
    out = [("token_embd.weight", t["model.embed_tokens.weight"], "model.embed_tokens.weight")]
    sub = [("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
           ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
           ("post_attention_layernorm", "ffn_norm"), ("mlp.c_fc", "ffn_up"), ("mlp.c_proj", "ffn_down")]
    for i in range(cfg["num_hidden_layers"]):
        for hf, gg in sub:
            for s in ("weight", "bias"):
                src = "model.layers.%d.%s.%s" % (i, hf, s)
                out.append(("blk.%d.%s.%s" % (i, gg, s), t[src], src))
    for s in ("weight", "bias"):
        out.append(("output_norm." + s, t["model.norm." + s], "model.norm." + s))
    if "lm_head.weight" in t:
        out.append(("output.weight", t["lm_head.weight"], "lm_head.weight"))
    return kv, out


MAPPERS = {"gpt2": ("gpt2", map_gpt2), "llama": ("llama", map_llama), "gpt_neox": ("gptneox", map_gptneox),
           "phi": ("phi2", map_phi2), "starcoder2": ("starcoder2", map_starcoder2)}


def keeps_f32(name, arr):
    """The converter's always-F32 rule (prepare_tensors)."""
    return (arr.ndim <= 1 or name.endswith("_norm.weight") or not name.endswith(".weight")
            or name == "position_embd.weight")


def convert(cfg, tensors, ftype="f32", name="tiny"):
    """Build a GGUFFile from a config dict and HF tensors. Returns (GGUFFile, stored) where stored
    maps each GGUF tensor name to the float32 values a reader gets back (after F16 rounding or
    Q8_0 dequantization), in GGUF layout (numpy shape, i.e. dims not reversed)."""
    arch, mapper = MAPPERS[cfg["model_type"]]
    kv, tlist = mapper(cfg, tensors)
    # Tensor order: the converter walks safetensors keys() (sorted names) and emits each
    # tensor's outputs in turn, so GGUF order follows the sorted source names (stable sort keeps
    # gpt2's output.weight right after token_embd.weight).
    tlist = sorted(tlist, key=lambda e: e[2])
    g = GGUFFile(arch)
    g.add("general.type", T_STRING, "model")
    g.add("general.name", T_STRING, name)
    for k, ty, v in kv:
        g.add(k, ty, v)
    g.add("general.file_type", T_U32, FTYPE[ftype])
    g.add("general.quantization_version", T_U32, GGML_QUANT_VERSION)
    g.add("general.alignment", T_U32, ALIGNMENT)
    stored = {}
    for tname, arr, _ in tlist:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        if keeps_f32(tname, arr) or ftype == "f32":
            g.add_tensor(tname, arr.shape, GGML_F32, arr.astype("<f4").tobytes())
            stored[tname] = arr
        elif ftype == "f16" or arr.shape[-1] % QK8_0 != 0:  # Q8_0 falls back to F16 like gguf-py
            h = arr.astype("<f2")
            g.add_tensor(tname, arr.shape, GGML_F16, h.tobytes())
            stored[tname] = h.astype(np.float32)
        else:
            raw, deq = quantize_q8_0(arr)
            g.add_tensor(tname, arr.shape, GGML_Q8_0, raw)
            stored[tname] = deq
    return g, stored


# ---------------------------------------------------------------------------------------------
# tokenizer metadata (what convert_hf_to_gguf.py / llama.cpp write; REFERENCE.md D.1)

TOK_NORMAL, TOK_UNKNOWN, TOK_CONTROL, TOK_USER_DEFINED, TOK_UNUSED, TOK_BYTE = 1, 2, 3, 4, 5, 6


def tokenizer_gpt2(path, bos=None, eos=None):
    """Byte-level BPE from a Hugging Face tokenizer.json (model BPE, ByteLevel): tokenizer.ggml.model
    "gpt2", pre "gpt-2" ("starcoder" for a Digits + ByteLevel sequence). Like get_vocab_base: one entry per id below the largest id; vocab tokens
    keep their byte-alphabet spelling (NORMAL); added tokens are stored as their raw content,
    CONTROL when special, else USER_DEFINED; ids without a token become "[PAD<id>]" (UNUSED).
    Merges are "a b" strings. bos/eos default to <|endoftext|> when the vocab has it."""
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    vocab = tj["model"]["vocab"]
    added = {a["id"]: a for a in tj.get("added_tokens") or []}
    n = max(list(vocab.values()) + list(added)) + 1
    rev = {i: t for t, i in vocab.items()}
    tokens, types = [], []
    for i in range(n):
        if i in added:
            tokens.append(added[i]["content"])
            types.append(TOK_CONTROL if added[i]["special"] else TOK_USER_DEFINED)
        elif i in rev:
            tokens.append(rev[i])
            types.append(TOK_NORMAL)
        else:
            tokens.append("[PAD%d]" % i)
            types.append(TOK_UNUSED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    pre = "gpt-2"
    seq = tj.get("pre_tokenizer") or {}
    if seq.get("type") == "Sequence" and [p_["type"] for p_ in seq["pretokenizers"]] == ["Digits", "ByteLevel"]:
        pre = "starcoder"  # llama.cpp's name for Digits(individual_digits) + ByteLevel
    eot = tokens.index("<|endoftext|>") if "<|endoftext|>" in tokens else None
    bos = eot if bos is None else bos
    eos = eot if eos is None else eos
    kv = [("tokenizer.ggml.model", T_STRING, "gpt2"),
          ("tokenizer.ggml.pre", T_STRING, pre),
          ("tokenizer.ggml.tokens", T_ARRAY, (T_STRING, tokens)),
          ("tokenizer.ggml.token_type", T_ARRAY, (T_I32, types)),
          ("tokenizer.ggml.merges", T_ARRAY, (T_STRING, merges))]
    if bos is not None:
        kv.append(("tokenizer.ggml.bos_token_id", T_U32, bos))
    if eos is not None:
        kv.append(("tokenizer.ggml.eos_token_id", T_U32, eos))
    return kv


def tokenizer_llama_from_llama2c(path):
    """SentencePiece vocabulary from a llama2.c tokenizer.bin (i32 max_token_length, then per
    token f32 score, i32 length, bytes), turned back into what llama.cpp writes for a
    SentencePiece model: tokenizer.ggml.model "llama", spaces spelled U+2581, "<unk>" UNKNOWN,
    "<s>" / "</s>" (llama2.c stores "\n<s>\n" / "\n</s>\n") CONTROL, "<0xNN>" BYTE, scores kept,
    bos 1, eos 2, unknown 0. The token count is the file's (512 for tok512.bin)."""
    with open(path, "rb") as f:
        blob = f.read()
    at = 4
    tokens, scores, types = [], [], []
    while at < len(blob):
        score, n = struct.unpack_from("<fi", blob, at)
        text = blob[at + 8:at + 8 + n].decode("utf-8")
        at += 8 + n
        i = len(tokens)
        if i == 0:
            text, ty = "<unk>", TOK_UNKNOWN
        elif i in (1, 2):
            text, ty = ("<s>", "</s>")[i - 1], TOK_CONTROL
        elif len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
            ty = TOK_BYTE
        else:
            text, ty = text.replace(" ", "\u2581"), TOK_NORMAL
        tokens.append(text)
        scores.append(score)
        types.append(ty)
    return [("tokenizer.ggml.model", T_STRING, "llama"),
            ("tokenizer.ggml.tokens", T_ARRAY, (T_STRING, tokens)),
            ("tokenizer.ggml.scores", T_ARRAY, (T_F32, scores)),
            ("tokenizer.ggml.token_type", T_ARRAY, (T_I32, types)),
            ("tokenizer.ggml.bos_token_id", T_U32, 1),
            ("tokenizer.ggml.eos_token_id", T_U32, 2),
            ("tokenizer.ggml.unknown_token_id", T_U32, 0),
            ("tokenizer.ggml.add_space_prefix", T_BOOL, True)]


def tokenizer_kv(path, cfg=None):
    """Tokenizer metadata from a tokenizer.json (byte-level BPE) or a llama2.c tokenizer.bin."""
    if path.endswith(".json"):
        cfg = cfg or {}
        return tokenizer_gpt2(path, cfg.get("bos_token_id"), cfg.get("eos_token_id"))
    return tokenizer_llama_from_llama2c(path)


def vocab_only(tok_path, name):
    """A GGUF with tokenizer metadata and no tensors (general.architecture "llama" for
    SentencePiece, "gpt2" for byte-level BPE: only the tokenizer keys matter)."""
    kv = tokenizer_kv(tok_path)
    g = GGUFFile("gpt2" if kv[0][2] == "gpt2" else "llama")
    g.add("general.type", T_STRING, "vocab")
    g.add("general.name", T_STRING, name)
    for k, ty, v in kv:
        g.add(k, ty, v)
    g.add("general.alignment", T_U32, ALIGNMENT)
    return g


# ---------------------------------------------------------------------------------------------
# block-quantized test fixture: random blocks of every type a reader must decode


GGML_Q4_0, GGML_Q4_1, GGML_Q5_0, GGML_Q5_1, GGML_BF16 = 2, 3, 6, 7, 30
GGML_Q4_K, GGML_Q5_K, GGML_Q6_K = 12, 13, 14
BLOCK_BYTES = {GGML_Q4_0: 18, GGML_Q4_1: 20, GGML_Q5_0: 22, GGML_Q5_1: 24, GGML_Q8_0: 34,
               GGML_Q4_K: 144, GGML_Q5_K: 176, GGML_Q6_K: 210}
BLOCK_ELEMS = {GGML_Q4_K: 256, GGML_Q5_K: 256, GGML_Q6_K: 256}


def dequantize_k(gtype, raw, n):
    """k-quant reference decoder from the layouts (ggml-common.h block_q4_K / q5_K / q6_K;
    REFERENCE.md D.1). Q4_K/Q5_K: fp16 d, fp16 dmin, 12 bytes of packed 6-bit (scale, min) for
    8 sub-blocks of 32, [Q5_K: 32 bytes qh,] 128 bytes qs; 64-element chunk k uses qs[32k:32k+32]
    (low nibbles: sub-block 2k, high: 2k+1), Q5_K bit 2k / 2k+1 of qh[l] is bit 4;
    x = d*sc*q - dmin*m. Q6_K: ql[128], qh[64], int8 scales[16], fp16 d last; per 128-element
    half, value l / l+32 / l+64 / l+96 = low nibble ql[l] / low ql[l+32] / high ql[l] / high
    ql[l+32] with qh[l] bits 0-1 / 2-3 / 4-5 / 6-7 on top, minus 32; scale per 16 values."""
    bb = BLOCK_BYTES[gtype]
    a = np.frombuffer(raw, dtype=np.uint8).reshape(n // 256, bb).astype(np.int64)
    out = np.zeros((n // 256, 256), dtype=np.float32)
    if gtype == GGML_Q6_K:
        d = a[:, 208:210].astype(np.uint8).copy().view("<f2").astype(np.float32)[:, 0]
        for h in range(2):
            ql, qh = a[:, 64 * h:64 * h + 64], a[:, 128 + 32 * h:128 + 32 * h + 32]
            sc = a[:, 192 + 8 * h:200 + 8 * h].astype(np.uint8).view(np.int8).astype(np.float32)
            parts = [(ql[:, 0:32] & 15) | ((qh & 3) << 4), (ql[:, 32:64] & 15) | (((qh >> 2) & 3) << 4),
                     (ql[:, 0:32] >> 4) | (((qh >> 4) & 3) << 4), (ql[:, 32:64] >> 4) | (((qh >> 6) & 3) << 4)]
            for k, q in enumerate(parts):
                for half in range(2):  # 16 values per scale
                    e = 128 * h + 32 * k + 16 * half
                    s_ = (d * sc[:, 2 * k + half])[:, None]
                    out[:, e:e + 16] = s_ * (q[:, 16 * half:16 * half + 16] - 32).astype(np.float32)
        return out.reshape(-1)
    d = a[:, 0:2].astype(np.uint8).copy().view("<f2").astype(np.float32)[:, 0]
    dmin = a[:, 2:4].astype(np.uint8).copy().view("<f2").astype(np.float32)[:, 0]
    sb = a[:, 4:16]
    sc = np.zeros((len(a), 8), dtype=np.int64)
    mn = np.zeros((len(a), 8), dtype=np.int64)
    for j in range(8):
        if j < 4:
            sc[:, j], mn[:, j] = sb[:, j] & 63, sb[:, j + 4] & 63
        else:
            sc[:, j] = (sb[:, j + 4] & 15) | ((sb[:, j - 4] >> 6) << 4)
            mn[:, j] = (sb[:, j + 4] >> 4) | ((sb[:, j] >> 6) << 4)
    five = gtype == GGML_Q5_K
    qh = a[:, 16:48]
    qs = a[:, 48:176] if five else a[:, 16:144]
    for k in range(4):
        q = qs[:, 32 * k:32 * k + 32]
        for half, nib in ((0, q & 15), (1, q >> 4)):
            j = 2 * k + half
            if five:
                nib = nib | (((qh >> j) & 1) << 4)
            dj = (d * sc[:, j].astype(np.float32))[:, None]
            mj = (dmin * mn[:, j].astype(np.float32))[:, None]
            out[:, 64 * k + 32 * half:64 * k + 32 * half + 32] = dj * nib.astype(np.float32) - mj
    return out.reshape(-1)


def dequantize_blocks(gtype, raw, n):
    """Reference decoder written from the block layouts (ggml-common.h; REFERENCE.md D.1):
    fp16 d first; Q4_1/Q5_1 then fp16 m; Q5_* then u32 qh; then the quants. For the 4/5-bit
    types, byte j of qs holds element j (low nibble) and element j + 16 (high nibble); bit j of
    qh is bit 4 of element j. Q4_0: d (q - 8); Q4_1: d q + m; Q5_0: d (q - 16); Q5_1: d q + m;
    Q8_0: d q (int8)."""
    if gtype in BLOCK_ELEMS:
        return dequantize_k(gtype, raw, n)
    bb = BLOCK_BYTES[gtype]
    a = np.frombuffer(raw, dtype=np.uint8).reshape(n // 32, bb)
    d = a[:, 0:2].copy().view("<f2").astype(np.float32)
    if gtype == GGML_Q8_0:
        return (d * a[:, 2:].copy().view(np.int8).astype(np.float32)).reshape(-1)
    m = a[:, 2:4].copy().view("<f2").astype(np.float32) if gtype in (GGML_Q4_1, GGML_Q5_1) else None
    at = {GGML_Q4_0: 2, GGML_Q4_1: 4, GGML_Q5_0: 6, GGML_Q5_1: 8}[gtype]
    qs = a[:, at:at + 16]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int32)  # [blocks, 32]
    if gtype in (GGML_Q5_0, GGML_Q5_1):
        qh = a[:, at - 4:at].copy().view("<u4").astype(np.int64)       # [blocks, 1]
        q |= (((qh >> np.arange(32)) & 1) << 4).astype(np.int32)
    if gtype == GGML_Q4_0:
        q -= 8
    if gtype == GGML_Q5_0:
        q -= 16
    out = d * q.astype(np.float32)
    if m is not None:
        out = out + m
    return out.reshape(-1).astype(np.float32)


def random_blocks(rng, gtype, n):
    """n / 32 random blocks: scale d (and min m) as fp16 of modest size, quants uniform over
    every bit pattern."""
    blocks = n // BLOCK_ELEMS.get(gtype, 32)
    raw = rng.integers(0, 256, size=(blocks, BLOCK_BYTES[gtype]), dtype=np.uint8)
    if gtype in (GGML_Q4_K, GGML_Q5_K):  # x = d sc q - dmin m with sc, m < 64, q < 32
        raw[:, 0:2] = rng.uniform(0.0002, 0.0006, size=(blocks, 1)).astype("<f2").view(np.uint8)
        raw[:, 2:4] = rng.uniform(0.0, 0.003, size=(blocks, 1)).astype("<f2").view(np.uint8)
        return raw.tobytes()
    if gtype == GGML_Q6_K:  # x = d sc (q - 32) with |sc| <= 128
        raw[:, 208:210] = rng.uniform(0.00005, 0.0001, size=(blocks, 1)).astype("<f2").view(np.uint8)
        return raw.tobytes()
    d = rng.uniform(0.005, 0.03, size=(blocks, 1)).astype("<f2")
    raw[:, 0:2] = d.view(np.uint8)
    if gtype in (GGML_Q4_1, GGML_Q5_1):
        raw[:, 2:4] = rng.uniform(-0.2, 0.0, size=(blocks, 1)).astype("<f2").view(np.uint8)
    return raw.tobytes()


def quant_fixture(out_dir, seed=7007, k_quants=False):
    """tests/data/gguf/quant: a 2-layer llama (d_model 32, 4 heads / 2 kv, d_ff 32,
    vocab 32, ctx 32) whose matrices are random blocks of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and
    raw BF16 / F16 values (norms F32), as model-quant.gguf, and the same weights decoded by
    dequantize_blocks (BF16, F16 widened) as all-F32 model-f32.gguf. A reader that decodes the
    blocks right gives both files the same logits."""
    rng = np.random.default_rng(seed)
    d_model, n_head, n_kv, d_ff, vocab, ctx, n_layer = 32, 4, 2, 32, 32, 32, 2
    if k_quants:  # rows must hold whole 256-element blocks
        d_model, n_head, n_kv, d_ff, vocab, ctx, n_layer = 256, 2, 1, 256, 16, 16, 1
    kv = [("llama.block_count", T_U32, n_layer), ("llama.context_length", T_U32, ctx),
          ("llama.embedding_length", T_U32, d_model), ("llama.feed_forward_length", T_U32, d_ff),
          ("llama.attention.head_count", T_U32, n_head), ("llama.attention.head_count_kv", T_U32, n_kv),
          ("llama.rope.freq_base", T_F32, 10000.0), ("llama.attention.layer_norm_rms_epsilon", T_F32, 1e-5),
          ("llama.rope.dimension_count", T_U32, d_model // n_head)]
    d_head = d_model // n_head
    mats = [("token_embd.weight", (vocab, d_model)), ("output.weight", (vocab, d_model))]
    for i in range(n_layer):
        mats += [("blk.%d.attn_q.weight" % i, (n_head * d_head, d_model)),
                 ("blk.%d.attn_k.weight" % i, (n_kv * d_head, d_model)),
                 ("blk.%d.attn_v.weight" % i, (n_kv * d_head, d_model)),
                 ("blk.%d.attn_output.weight" % i, (d_model, n_head * d_head)),
                 ("blk.%d.ffn_gate.weight" % i, (d_ff, d_model)),
                 ("blk.%d.ffn_up.weight" % i, (d_ff, d_model)),
                 ("blk.%d.ffn_down.weight" % i, (d_model, d_ff))]
    types = [GGML_Q4_0, GGML_Q4_1, GGML_Q5_0, GGML_Q5_1, GGML_Q8_0, GGML_BF16, GGML_F16]
    if k_quants:
        types = [GGML_Q4_K, GGML_Q5_K, GGML_Q6_K]
    gq, gf = GGUFFile("llama"), GGUFFile("llama")
    for g, ft in ((gq, 2), (gf, 0)):
        g.add("general.name", T_STRING, "gguf_quant")
        for k, ty, v in kv:
            g.add(k, ty, v)
        g.add("general.file_type", T_U32, ft)
        g.add("general.quantization_version", T_U32, GGML_QUANT_VERSION)
        g.add("general.alignment", T_U32, ALIGNMENT)
    for j, (name, shape) in enumerate(mats):
        gtype = types[j % len(types)]
        n = shape[0] * shape[1]
        if gtype in BLOCK_BYTES:
            raw = random_blocks(rng, gtype, n)
            val = dequantize_blocks(gtype, raw, n)
        elif gtype == GGML_BF16:
            bits = (rng.normal(0, 0.2, n).astype("<f4").view("<u4") >> 16).astype("<u2")
            raw = bits.tobytes()
            val = (bits.astype("<u4") << 16).view("<f4")
        else:
            h = rng.normal(0, 0.2, n).astype("<f2")
            raw, val = h.tobytes(), h.astype(np.float32)
        gq.add_tensor(name, shape, gtype, raw)
        gf.add_tensor(name, shape, GGML_F32, val.astype("<f4").tobytes())
    norms = ["output_norm.weight"] + ["blk.%d.%s.weight" % (i, k) for i in range(n_layer)
                                     for k in ("attn_norm", "ffn_norm")]
    for name in norms:
        w = (1 + rng.normal(0, 0.1, d_model)).astype("<f4")
        gq.add_tensor(name, (d_model,), GGML_F32, w.tobytes())
        gf.add_tensor(name, (d_model,), GGML_F32, w.tobytes())
    gq.write(out_dir + "/model-quant.gguf")
    gf.write(out_dir + "/model-f32.gguf")
    tokens = [0] + [int(t) for t in rng.integers(0, vocab, 14)] + [vocab - 1]
    with open(out_dir + "/tokens.txt", "w") as f:
        f.write(" ".join(str(t) for t in tokens) + "\n")


# ---------------------------------------------------------------------------------------------
# a llama2.c checkpoint as llama.cpp's "llama" GGUF (for tests against llama2.c's own outputs)


def from_llama2c(model_path, tok_path):
    """llama2.c version-0 checkpoint (REFERENCE.md D.2: 7 int32 dim, hidden_dim, n_layers,
    n_heads, n_kv_heads, vocab_size (negative: unshared classifier), seq_len; then float32
    token embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, two RoPE tables,
    optional classifier) -> GGUF "llama", all F32. llama2.c's q/k rows are already in the
    interleaved-pair (Meta) order that "llama" GGUF files use, so they are stored as they are;
    w1 -> ffn_gate, w3 -> ffn_up, w2 -> ffn_down; eps 1e-5 and RoPE base 10000 as run.c;
    tokenizer from tok_path (tokenizer_llama_from_llama2c)."""
    with open(model_path, "rb") as f:
        blob = f.read()
    dim, hidden, n_layer, n_head, n_kv, vocab, seq = struct.unpack_from("<7i", blob, 0)
    shared = vocab > 0
    vocab = abs(vocab)
    d_head = dim // n_head
    w = np.frombuffer(blob, dtype="<f4", offset=28)
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        a = w[at:at + n].reshape(shape)
        at += n
        return a

    emb = take(vocab, dim)
    rms_att = take(n_layer, dim)
    wq = take(n_layer, n_head * d_head, dim)
    wk = take(n_layer, n_kv * d_head, dim)
    wv = take(n_layer, n_kv * d_head, dim)
    wo = take(n_layer, dim, n_head * d_head)
    rms_ffn = take(n_layer, dim)
    w1 = take(n_layer, hidden, dim)
    w2 = take(n_layer, dim, hidden)
    w3 = take(n_layer, hidden, dim)
    rms_final = take(dim)
    take(seq, d_head // 2)
    take(seq, d_head // 2)
    wcls = emb if shared else take(vocab, dim)
    g = GGUFFile("llama")
    g.add("general.name", T_STRING, model_path.split("/")[-1])
    for k, ty, v in [("llama.block_count", T_U32, n_layer), ("llama.context_length", T_U32, seq),
                     ("llama.embedding_length", T_U32, dim), ("llama.feed_forward_length", T_U32, hidden),
                     ("llama.attention.head_count", T_U32, n_head),
                     ("llama.attention.head_count_kv", T_U32, n_kv),
                     ("llama.rope.freq_base", T_F32, 10000.0),
                     ("llama.attention.layer_norm_rms_epsilon", T_F32, 1e-5),
                     ("llama.rope.dimension_count", T_U32, d_head)]:
        g.add(k, ty, v)
    g.add("general.file_type", T_U32, 0)
    g.add("general.alignment", T_U32, ALIGNMENT)
    for k, ty, v in tokenizer_llama_from_llama2c(tok_path):
        g.add(k, ty, v)

    def put(name, a):
        g.add_tensor(name, a.shape, GGML_F32, np.ascontiguousarray(a, dtype="<f4").tobytes())

    put("token_embd.weight", emb)
    for i in range(n_layer):
        for name, a in (("attn_norm", rms_att[i]), ("attn_q", wq[i]), ("attn_k", wk[i]), ("attn_v", wv[i]),
                        ("attn_output", wo[i]), ("ffn_norm", rms_ffn[i]), ("ffn_gate", w1[i]),
                        ("ffn_down", w2[i]), ("ffn_up", w3[i])):
            put("blk.%d.%s.weight" % (i, name), a)
    put("output_norm.weight", rms_final)
    if not shared:
        put("output.weight", wcls)
    return g


def main(argv):
    if len(argv) >= 5 and argv[1] == "--from-llama2c":
        from_llama2c(argv[2], argv[3]).write(argv[4])
        return 0
    if len(argv) >= 3 and argv[1] in ("--quant-fixture", "--kquant-fixture"):
        quant_fixture(argv[2], seed=7007 if argv[1] == "--quant-fixture" else 8008,
                      k_quants=argv[1] == "--kquant-fixture")
        return 0
    if len(argv) < 3:
        print(__doc__)
        return 2
    if argv[1] == "--vocab-only":
        g = vocab_only(argv[2], argv[2].split("/")[-1])
        if "--chat-template" in argv:  # tokenizer.chat_template, as llama.cpp's converter writes it
            with open(argv[argv.index("--chat-template") + 1], encoding="utf-8") as f:
                g.add("tokenizer.chat_template", T_STRING, f.read())
        g.write(argv[3])
        return 0
    ftype = "f32"
    if "--type" in argv:
        ftype = argv[argv.index("--type") + 1]
    with open(argv[1] + "/config.json") as f:
        cfg = json.load(f)
    g, _ = convert(cfg, read_safetensors(argv[1] + "/model.safetensors"), ftype,
                   name=argv[1].rstrip("/").split("/")[-1])
    if "--tokenizer" in argv:
        for k, ty, v in tokenizer_kv(argv[argv.index("--tokenizer") + 1], cfg):
            g.add(k, ty, v)
    g.write(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
