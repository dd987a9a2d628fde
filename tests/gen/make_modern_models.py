#!/usr/bin/python3
"""make_modern_models.py - tiny Hugging Face-layout checkpoints of the small models people use
today (Llama-3.x with rope_scaling, Qwen2/2.5, Qwen3, Gemma-2, Gemma-3, Phi-3/3.5/4-mini,
Mistral, SmolLM3) with float64 NumPy reference logits, plus GGUF copies laid out as llama.cpp's
convert_hf_to_gguf.py writes them. Output: tests/data/modern/NAME/ (see its README.md).

    /usr/bin/python3 tests/gen/make_modern_models.py [OUT_ROOT] [NAME...]  (default tests/data/modern)
    /usr/bin/python3 tests/gen/make_modern_models.py --check [ROOT]      (recompute from the files)

Every reference forward below is written from the architecture's transformers modeling file
(modeling_llama.py with modeling_rope_utils.py, modeling_qwen2.py, modeling_qwen3.py,
modeling_gemma2.py, modeling_gemma3.py, modeling_phi3.py, modeling_mistral.py,
modeling_smollm3.py), module by module with the checkpoint's own tensor names and config keys, in
float64 on the float32 values stored in model.safetensors. Shared are only the textbook pieces
(RMSNorm, the tanh GELU, SiLU, rotate_half RoPE from a given inverse-frequency vector, masked
softmax attention). While writing, the generator asserts that each feature the tiny model is
meant to exercise changes its logits: a sliding window, rope scaling, soft-capping, a per-head
q/k norm, an attention scale, a NoPE layer (each switched off in turn must move the logits by
more than FEATURE_MIN). Seeds are fixed; the output is byte-for-byte reproducible.
"""
import json
import math
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # tests/gen/gguf_write.py
import gguf_write  # noqa: E402
from gguf_write import T_ARRAY, T_BOOL, T_F32, T_STRING, T_U32  # noqa: E402,F401

N_TOKENS = 40       # long enough for every window below (4..12) and for the rope changes to show
FEATURE_MIN = 1e-2  # a feature switched off must move some logit by more than this

# ---------------------------------------------------------------------------------------------
# safetensors writer (REFERENCE.md E.1): u64 header length, JSON header with __metadata__
# {"format": "pt"}, tensors sorted by name, all F32, header padded with spaces to a multiple of 8.


def write_safetensors(path, tensors):
    header = {"__metadata__": {"format": "pt"}}
    blobs, off = [], 0
    for name, arr in sorted(tensors.items()):
        raw = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


# ---------------------------------------------------------------------------------------------
# textbook pieces (float64)


def rms_norm(x, w, eps):
    """LlamaRMSNorm / Qwen2RMSNorm / Qwen3RMSNorm / Phi3RMSNorm / MistralRMSNorm: x / rms * w.
    Gemma's (1 + w) is written out where it is used."""
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def gelu_tanh(x):  # gelu_pytorch_tanh
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def rope(x, pos, inv_freq, attention_scaling=1.0):
    """apply_rotary_pos_emb with rotate_half on the first 2 * len(inv_freq) dims of every head
    (Phi3's partial rotary: the rest pass through). cos and sin are multiplied by
    attention_scaling, as the RotaryEmbedding modules do. x [T, H, D], pos [T]."""
    rot = 2 * len(inv_freq)
    ang = pos[:, None] * inv_freq[None, :]                  # [T, rot/2]
    emb = np.concatenate([ang, ang], -1)
    cos = (np.cos(emb) * attention_scaling)[:, None, :]
    sin = (np.sin(emb) * attention_scaling)[:, None, :]
    xr, xp = x[..., :rot], x[..., rot:]
    x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:]
    return np.concatenate([xr * cos + np.concatenate([-x2, x1], -1) * sin, xp], -1)


def attention(q, k, v, scaling, sliding_window=None, softcap=None):
    """eager_attention_forward: q [T, H, D], k, v [T, Hkv, D]; query head h reads kv head
    h // (H / Hkv) (repeat_kv). scores = q k^T * scaling, then (Gemma-2) softcap * tanh(s /
    softcap), then the mask: key j visible from query i when j <= i and, with a window,
    i - j < sliding_window (masking_utils sliding_window_overlay: kv_idx > q_idx - window)."""
    T, H, _ = q.shape
    rep = H // k.shape[1]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    visible = j <= i
    if sliding_window is not None:
        visible &= (i - j) < sliding_window
    out = np.zeros((T, H, v.shape[2]))
    for h in range(H):
        s = q[:, h, :] @ k[:, h // rep, :].T * scaling
        if softcap is not None:
            s = np.tanh(s / softcap) * softcap
        s = np.where(visible, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        out[:, h, :] = (s / s.sum(-1, keepdims=True)) @ v[:, h // rep, :]
    return out.reshape(T, -1)


def W(t, name):
    return t[name].astype(np.float64)


def linear(t, name, x, bias=False):
    y = x @ W(t, name + ".weight").T
    return y + W(t, name + ".bias") if bias else y


# ---------------------------------------------------------------------------------------------
# RoPE inverse frequencies (modeling_rope_utils.py), in float64


def inv_freq_default(base, dim):
    return 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)


def inv_freq_scaled(rp, base, dim, max_pos, seq_len):
    """ROPE_INIT_FUNCTIONS[rope_type](config): (inv_freq, attention_scaling). rp is the
    rope_scaling dict (type spelled rope_type or type); seq_len is the forward's length (longrope
    picks long_factor when it passes original_max_position_embeddings, dynamic_rope_update)."""
    inv = inv_freq_default(base, dim)
    kind = (rp or {}).get("rope_type", (rp or {}).get("type", "default"))
    if kind == "default":
        return inv, 1.0
    if kind == "linear":                       # _compute_linear_scaling_rope_parameters
        return inv / rp["factor"], 1.0
    if kind == "llama3":                       # _compute_llama3_parameters
        factor, lo, hi = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
        old = rp["original_max_position_embeddings"]
        low_wl, high_wl = old / lo, old / hi
        wavelen = 2 * math.pi / inv
        out = np.where(wavelen > low_wl, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
        return np.where(medium, smoothed, out), 1.0
    if kind == "longrope":                     # _compute_longrope_parameters (Phi3)
        orig = rp["original_max_position_embeddings"]
        factor = rp.get("factor") or max_pos / orig
        att = rp.get("attention_factor")
        if att is None:
            att = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(orig))
        ext = np.array(rp["long_factor"] if seq_len > orig else rp["short_factor"], dtype=np.float64)
        return 1.0 / (ext * base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)), att
    raise ValueError("rope type %s" % kind)


# ---------------------------------------------------------------------------------------------
# reference forwards, one per transformers modeling file. t: name -> float32 array (as stored);
# off: names of features to switch off (only for the generator's "does it matter" checks).


def forward_llama(cfg, t, ids, off=()):
    """modeling_llama.py LlamaForCausalLM (also mistral / smollm3 below): RMSNorm; q/k/v/o with
    bias when attention_bias; head_dim from the config when set (else hidden/heads), scaling
    head_dim^-0.5; RoPE from rope_scaling (llama3 / linear); SwiGLU (bias when mlp_bias);
    lm_head or the tied embedding."""
    return _llama_like(cfg, t, ids, off, window_of=lambda i: None, rope_of=lambda i: True)


def _llama_like(cfg, t, ids, off, window_of, rope_of, tie_default=False):
    """The decoder of LlamaModel; window_of(i) / rope_of(i) say how layer i attends. tie_default:
    the config class's tie_word_embeddings default (LlamaConfig, MistralConfig False; SmolLM3Config
    leaves it to PretrainedConfig, True)."""
    Hd, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or Hd // H
    eps, ab, mb = cfg["rms_norm_eps"], cfg.get("attention_bias", False), cfg.get("mlp_bias", False)
    assert cfg["hidden_act"] == "silu"
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    rp = None if "rope_scaling" in off else cfg.get("rope_scaling")
    inv, att = inv_freq_scaled(rp, cfg["rope_theta"], D, cfg["max_position_embeddings"], T)
    h = W(t, "model.embed_tokens.weight")[ids]
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        x = rms_norm(h, W(t, L + "input_layernorm.weight"), eps)
        q = linear(t, L + "self_attn.q_proj", x, ab).reshape(T, H, D)
        k = linear(t, L + "self_attn.k_proj", x, ab).reshape(T, Hkv, D)
        v = linear(t, L + "self_attn.v_proj", x, ab).reshape(T, Hkv, D)
        if rope_of(i) or "nope" in off:
            q, k = rope(q, pos, inv, att), rope(k, pos, inv, att)
        win = None if "window" in off else window_of(i)
        h = h + linear(t, L + "self_attn.o_proj", attention(q, k, v, D ** -0.5, win), ab)
        x = rms_norm(h, W(t, L + "post_attention_layernorm.weight"), eps)
        g = silu(linear(t, L + "mlp.gate_proj", x, mb)) * linear(t, L + "mlp.up_proj", x, mb)
        h = h + linear(t, L + "mlp.down_proj", g, mb)
    h = rms_norm(h, W(t, "model.norm.weight"), eps)
    head = W(t, "model.embed_tokens.weight") if cfg.get("tie_word_embeddings", tie_default) else W(t, "lm_head.weight")
    return h @ head.T


def forward_mistral(cfg, t, ids, off=()):
    """modeling_mistral.py: the Llama block without biases; config.sliding_window (when set) on
    every layer (create_sliding_window_causal_mask)."""
    assert not cfg.get("attention_bias") and not cfg.get("mlp_bias")
    return _llama_like(cfg, t, ids, off, window_of=lambda i: cfg.get("sliding_window"), rope_of=lambda i: True)


def forward_smollm3(cfg, t, ids, off=()):
    """modeling_smollm3.py: the Llama block; layer i applies RoPE only when no_rope_layers[i]
    is 1 (a NoPE layer otherwise); a window only on layer_types "sliding_attention" when
    use_sliding_window."""
    nrl = cfg["no_rope_layers"]
    types = cfg.get("layer_types") or ["full_attention"] * cfg["num_hidden_layers"]
    win = cfg.get("sliding_window") if cfg.get("use_sliding_window") else None
    return _llama_like(cfg, t, ids, off, window_of=lambda i: win if types[i] == "sliding_attention" else None,
                       rope_of=lambda i: bool(nrl[i]), tie_default=True)


def qwen_layer_types(cfg):
    """Qwen2Config / Qwen3Config: sliding_window only when use_sliding_window; layer i is
    sliding when a window is set and i >= max_window_layers (unless layer_types is given)."""
    win = cfg.get("sliding_window") if cfg.get("use_sliding_window") else None
    types = cfg.get("layer_types") or ["sliding_attention" if win is not None and i >= cfg["max_window_layers"]
                                       else "full_attention" for i in range(cfg["num_hidden_layers"])]
    return types, win


def forward_qwen(cfg, t, ids, off=()):
    """modeling_qwen2.py (q/k/v with bias, o_proj without) and modeling_qwen3.py (bias only with
    attention_bias; head_dim from the config; q_norm / k_norm: RMSNorm over head_dim of each
    q and k head, before RoPE)."""
    qwen3 = cfg["model_type"] == "qwen3"
    Hd, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = (cfg.get("head_dim") if qwen3 else None) or Hd // H
    eps = cfg["rms_norm_eps"]
    qkv_bias = cfg.get("attention_bias", False) if qwen3 else True
    o_bias = cfg.get("attention_bias", False) if qwen3 else False
    types, win = qwen_layer_types(cfg)
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    inv, att = inv_freq_scaled(cfg.get("rope_scaling"), cfg["rope_theta"], D, cfg["max_position_embeddings"], T)
    h = W(t, "model.embed_tokens.weight")[ids]
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        x = rms_norm(h, W(t, L + "input_layernorm.weight"), eps)
        q = linear(t, L + "self_attn.q_proj", x, qkv_bias).reshape(T, H, D)
        k = linear(t, L + "self_attn.k_proj", x, qkv_bias).reshape(T, Hkv, D)
        v = linear(t, L + "self_attn.v_proj", x, qkv_bias).reshape(T, Hkv, D)
        if qwen3 and "qk_norm" not in off:
            q = rms_norm(q, W(t, L + "self_attn.q_norm.weight"), eps)
            k = rms_norm(k, W(t, L + "self_attn.k_norm.weight"), eps)
        q, k = rope(q, pos, inv, att), rope(k, pos, inv, att)
        w = win if types[i] == "sliding_attention" and "window" not in off else None
        h = h + linear(t, L + "self_attn.o_proj", attention(q, k, v, D ** -0.5, w), o_bias)
        x = rms_norm(h, W(t, L + "post_attention_layernorm.weight"), eps)
        h = h + linear(t, L + "mlp.down_proj", silu(linear(t, L + "mlp.gate_proj", x)) * linear(t, L + "mlp.up_proj", x))
    h = rms_norm(h, W(t, "model.norm.weight"), eps)
    head = W(t, "model.embed_tokens.weight") if cfg.get("tie_word_embeddings", False) else W(t, "lm_head.weight")
    return h @ head.T


def gemma_norm(x, w, eps):
    """Gemma2RMSNorm / Gemma3RMSNorm: x / rms * (1 + w), the weight stored zero-centred and
    1.0 + weight.float() computed in float32 (so a GGUF's w + 1 is that very factor)."""
    factor = (np.float32(1.0) + np.asarray(w, dtype=np.float32)).astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * factor


def gemma_layer_types(cfg):
    """Gemma2Config: layer i sliding when i is even ((i + 1) % 2); Gemma3TextConfig: sliding
    unless (i + 1) % sliding_window_pattern == 0 (default 6); an explicit layer_types wins."""
    if cfg.get("layer_types"):
        return cfg["layer_types"]
    period = 2 if cfg["model_type"] == "gemma2" else cfg.get("sliding_window_pattern", 6)
    return ["sliding_attention" if (i + 1) % period else "full_attention" for i in range(cfg["num_hidden_layers"])]


def forward_gemma(cfg, t, ids, off=(), prefix="model."):
    """modeling_gemma2.py Gemma2ForCausalLM and modeling_gemma3.py Gemma3ForCausalLM:
    embeddings times sqrt(hidden_size) rounded to the model dtype (float32 here); four (1 + w)
    RMSNorms per layer (input, post_attention on the attention output before the residual add,
    pre_feedforward, post_feedforward likewise); GeGLU with gelu_pytorch_tanh; attention scale
    query_pre_attn_scalar^-0.5; Gemma-2: attention scores soft-capped before the mask,
    final logits soft-capped; Gemma-3: (1 + w) q_norm / k_norm over head_dim before RoPE, local
    (sliding) layers use rope_local_base_freq with the default RoPE, global layers rope_theta
    with rope_scaling; the head is the tied embedding."""
    g3 = cfg["model_type"] == "gemma3_text"
    Hd, H, Hkv, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    assert cfg["hidden_activation"] == "gelu_pytorch_tanh" and not cfg.get("attention_bias")
    types = gemma_layer_types(cfg)
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    maxp = cfg["max_position_embeddings"]
    rs = None if "rope_scaling" in off else cfg.get("rope_scaling")
    inv_g, att_g = inv_freq_scaled(rs if g3 else None, cfg.get("rope_theta", 10000.0), D, maxp, T)
    local_base = cfg.get("rope_local_base_freq", 10000.0) if g3 and "local_base" not in off else cfg.get("rope_theta", 10000.0)
    inv_l, att_l = inv_freq_scaled(None, local_base, D, maxp, T)
    scaling = (D if "attn_scale" in off else cfg["query_pre_attn_scalar"]) ** -0.5
    softcap = None if g3 or "softcap" in off else cfg.get("attn_logit_softcapping")
    h = W(t, prefix + "embed_tokens.weight")[ids] * float(np.float32(Hd ** 0.5))
    for i in range(cfg["num_hidden_layers"]):
        L = "%slayers.%d." % (prefix, i)
        sliding = types[i] == "sliding_attention"
        x = gemma_norm(h, t[L + "input_layernorm.weight"], eps)
        q = linear(t, L + "self_attn.q_proj", x).reshape(T, H, D)
        k = linear(t, L + "self_attn.k_proj", x).reshape(T, Hkv, D)
        v = linear(t, L + "self_attn.v_proj", x).reshape(T, Hkv, D)
        if g3 and "qk_norm" not in off:
            q = gemma_norm(q, t[L + "self_attn.q_norm.weight"], eps)
            k = gemma_norm(k, t[L + "self_attn.k_norm.weight"], eps)
        inv, att = (inv_l, att_l) if sliding else (inv_g, att_g)
        q, k = rope(q, pos, inv, att), rope(k, pos, inv, att)
        win = cfg["sliding_window"] if sliding and "window" not in off else None
        a = linear(t, L + "self_attn.o_proj", attention(q, k, v, scaling, win, softcap))
        if "post_norms" not in off:
            a = gemma_norm(a, t[L + "post_attention_layernorm.weight"], eps)
        h = h + a
        x = gemma_norm(h, t[L + "pre_feedforward_layernorm.weight"], eps)
        m = linear(t, L + "mlp.down_proj", gelu_tanh(linear(t, L + "mlp.gate_proj", x)) * linear(t, L + "mlp.up_proj", x))
        if "post_norms" not in off:
            m = gemma_norm(m, t[L + "post_feedforward_layernorm.weight"], eps)
        h = h + m
    h = gemma_norm(h, t[prefix + "norm.weight"], eps)
    logits = h @ W(t, prefix + "embed_tokens.weight").T
    cap = cfg.get("final_logit_softcapping")
    if cap is not None and "softcap" not in off:
        logits = np.tanh(logits / cap) * cap
    return logits


def forward_gemma3_mm(cfg, t, ids, off=()):
    """modeling_gemma3.py Gemma3ForConditionalGeneration on text only: the text model is
    text_config (Gemma3TextConfig) with the weights under language_model.model.* (vision tower
    and projector unused)."""
    return forward_gemma(cfg["text_config"], t, ids, off, prefix="language_model.model.")


def forward_phi3(cfg, t, ids, off=()):
    """modeling_phi3.py Phi3ForCausalLM: fused qkv_proj (q rows, then k, then v) and
    gate_up_proj (first half gate, second half up: down(up * silu(gate))); partial rotary on
    int(head_dim * partial_rotary_factor) dims; longrope (short_factor up to
    original_max_position_embeddings, long_factor past it, attention factor on cos/sin);
    config.sliding_window on every layer; RMSNorm; lm_head or tied."""
    Hd, H, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = Hd // H
    F = cfg["intermediate_size"]
    eps = cfg["rms_norm_eps"]
    rot = int(D * cfg.get("partial_rotary_factor", 1.0))
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    rp = None if "rope_scaling" in off else cfg.get("rope_scaling")
    if rp:
        rp = dict(rp, original_max_position_embeddings=cfg["original_max_position_embeddings"])
    inv, att = inv_freq_scaled(rp, cfg["rope_theta"], rot, cfg["max_position_embeddings"], T)
    win = None if "window" in off else cfg.get("sliding_window")
    h = W(t, "model.embed_tokens.weight")[ids]
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        x = rms_norm(h, W(t, L + "input_layernorm.weight"), eps)
        qkv = linear(t, L + "self_attn.qkv_proj", x)
        q = qkv[:, :H * D].reshape(T, H, D)
        k = qkv[:, H * D:(H + Hkv) * D].reshape(T, Hkv, D)
        v = qkv[:, (H + Hkv) * D:].reshape(T, Hkv, D)
        q, k = rope(q, pos, inv, att), rope(k, pos, inv, att)
        h = h + linear(t, L + "self_attn.o_proj", attention(q, k, v, D ** -0.5, win))
        x = rms_norm(h, W(t, L + "post_attention_layernorm.weight"), eps)
        gu = linear(t, L + "mlp.gate_up_proj", x)
        h = h + linear(t, L + "mlp.down_proj", gu[:, F:] * silu(gu[:, :F]))
    h = rms_norm(h, W(t, "model.norm.weight"), eps)
    head = W(t, "model.embed_tokens.weight") if cfg.get("tie_word_embeddings") else W(t, "lm_head.weight")
    return h @ head.T


FORWARD = {"llama": forward_llama, "mistral": forward_mistral, "smollm3": forward_smollm3,
           "qwen2": forward_qwen, "qwen3": forward_qwen, "gemma2": forward_gemma,
           "gemma3_text": forward_gemma, "gemma3": forward_gemma3_mm, "phi3": forward_phi3}


# ---------------------------------------------------------------------------------------------
# weights: matrices N(0, 0.2); norm weights 1 + N(0, 0.1) (Gemma: N(0, 0.1), used as 1 + w);
# biases N(0, 0.1) (nonzero, so a dropped bias shows). Same convention as make_arch_models.py.


class Gen:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.t = {}

    def mat(self, name, rows, cols):
        self.t[name] = self.rng.normal(0.0, 0.2, size=(rows, cols)).astype(np.float32)

    def norm(self, name, n, centre=1.0):
        self.t[name + ".weight"] = (centre + self.rng.normal(0.0, 0.1, size=n)).astype(np.float32)

    def vec(self, name, n):
        self.t[name] = self.rng.normal(0.0, 0.1, size=n).astype(np.float32)

    def linear(self, name, out, inp, bias=False):
        self.mat(name + ".weight", out, inp)
        if bias:
            self.vec(name + ".bias", out)


def llama_like_weights(cfg, g, prefix="model.", qkv_bias=False, o_bias=False, qk_norm=False,
                       norm_centre=1.0, post_norms=False):
    Hd, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    H = cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or Hd // H
    g.mat(prefix + "embed_tokens.weight", V, Hd)
    for i in range(cfg["num_hidden_layers"]):
        L = "%slayers.%d." % (prefix, i)
        g.norm(L + "input_layernorm", Hd, norm_centre)
        g.linear(L + "self_attn.q_proj", H * D, Hd, qkv_bias)
        g.linear(L + "self_attn.k_proj", Hkv * D, Hd, qkv_bias)
        g.linear(L + "self_attn.v_proj", Hkv * D, Hd, qkv_bias)
        g.linear(L + "self_attn.o_proj", Hd, H * D, o_bias)
        if qk_norm:
            g.norm(L + "self_attn.q_norm", D, norm_centre)
            g.norm(L + "self_attn.k_norm", D, norm_centre)
        g.norm(L + "post_attention_layernorm", Hd, norm_centre)
        if post_norms:
            g.norm(L + "pre_feedforward_layernorm", Hd, norm_centre)
            g.norm(L + "post_feedforward_layernorm", Hd, norm_centre)
        g.linear(L + "mlp.gate_proj", F, Hd, cfg.get("mlp_bias", False))
        g.linear(L + "mlp.up_proj", F, Hd, cfg.get("mlp_bias", False))
        g.linear(L + "mlp.down_proj", Hd, F, cfg.get("mlp_bias", False))
    g.norm(prefix + "norm", Hd, norm_centre)
    if not cfg.get("tie_word_embeddings", True):
        g.mat("lm_head.weight", V, Hd)


def weights_for(cfg, g):
    mt = cfg["model_type"]
    if mt in ("llama", "mistral", "smollm3"):
        ab = cfg.get("attention_bias", False)
        llama_like_weights(cfg, g, qkv_bias=ab, o_bias=ab)
    elif mt == "qwen2":
        llama_like_weights(cfg, g, qkv_bias=True)
    elif mt == "qwen3":
        llama_like_weights(cfg, g, qk_norm=True)
    elif mt in ("gemma2", "gemma3_text"):
        llama_like_weights(cfg, g, qk_norm=mt == "gemma3_text", norm_centre=0.0, post_norms=True)
    elif mt == "gemma3":
        llama_like_weights(cfg["text_config"], g, prefix="language_model.model.", qk_norm=True,
                           norm_centre=0.0, post_norms=True)
        # the rest of a Gemma3ForConditionalGeneration checkpoint, which a text converter skips
        g.mat("vision_tower.vision_model.embeddings.patch_embedding.weight", 8, 12)
        g.mat("multi_modal_projector.mm_input_projection_weight", 8, cfg["text_config"]["hidden_size"])
        g.norm("multi_modal_projector.mm_soft_emb_norm", 8, 0.0)
    elif mt == "phi3":
        Hd, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
        H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        D = Hd // H
        g.mat("model.embed_tokens.weight", V, Hd)
        for i in range(cfg["num_hidden_layers"]):
            L = "model.layers.%d." % i
            g.norm(L + "input_layernorm", Hd)
            g.linear(L + "self_attn.qkv_proj", (H + 2 * Hkv) * D, Hd)
            g.linear(L + "self_attn.o_proj", Hd, H * D)
            g.norm(L + "post_attention_layernorm", Hd)
            g.linear(L + "mlp.gate_up_proj", 2 * F, Hd)
            g.linear(L + "mlp.down_proj", Hd, F)
        g.norm("model.norm", Hd)
        if not cfg.get("tie_word_embeddings"):
            g.mat("lm_head.weight", V, Hd)
    else:
        raise ValueError(mt)


# ---------------------------------------------------------------------------------------------
# configs: the real Hugging Face key names and the released models' values where they do not
# change the math at this size; sizes tiny. Comments name the real checkpoint each copies.

COMMON = {"attention_dropout": 0.0, "initializer_range": 0.02, "torch_dtype": "float32",
          "transformers_version": "4.51.3", "use_cache": True}


def cfg_llama3():  # Llama-3.2-1B: rope_scaling llama3, tied, GQA
    return dict(COMMON, architectures=["LlamaForCausalLM"], attention_bias=False, bos_token_id=1,
                eos_token_id=[2, 3], head_dim=16, hidden_act="silu", hidden_size=32, intermediate_size=64,
                max_position_embeddings=512, mlp_bias=False, model_type="llama", num_attention_heads=4,
                num_hidden_layers=2, num_key_value_heads=2, pretraining_tp=1, rms_norm_eps=1e-05,
                rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                              "original_max_position_embeddings": 64, "rope_type": "llama3"},
                rope_theta=10000.0, tie_word_embeddings=True, vocab_size=104)


def cfg_llama_linear():  # a linear rope_scaling Llama (older long-context fine-tunes), untied
    return dict(COMMON, architectures=["LlamaForCausalLM"], attention_bias=False, bos_token_id=1,
                eos_token_id=2, hidden_act="silu", hidden_size=32, intermediate_size=64,
                max_position_embeddings=256, mlp_bias=False, model_type="llama", num_attention_heads=4,
                num_hidden_layers=2, num_key_value_heads=4, pretraining_tp=1, rms_norm_eps=1e-06,
                rope_scaling={"factor": 4.0, "type": "linear"}, rope_theta=10000.0,
                tie_word_embeddings=False, vocab_size=88)


def cfg_qwen2(swa=False):  # Qwen2.5-0.5B: q/k/v biases, tied, theta 1e6, use_sliding_window false
    return dict(COMMON, architectures=["Qwen2ForCausalLM"], bos_token_id=1, eos_token_id=2, hidden_act="silu",
                hidden_size=32, intermediate_size=64, max_position_embeddings=128,
                max_window_layers=1 if swa else 2, model_type="qwen2", num_attention_heads=4,
                num_hidden_layers=2, num_key_value_heads=2, rms_norm_eps=1e-06, rope_scaling=None,
                rope_theta=1000000.0, sliding_window=6, tie_word_embeddings=not swa,
                use_sliding_window=swa, vocab_size=96)


def cfg_qwen3():  # Qwen3-0.6B: head_dim 128 with hidden 1024 / 16 heads, q_norm/k_norm, tied
    return dict(COMMON, architectures=["Qwen3ForCausalLM"], attention_bias=False, bos_token_id=1,
                eos_token_id=2, head_dim=16, hidden_act="silu", hidden_size=32, intermediate_size=64,
                max_position_embeddings=128, max_window_layers=2, model_type="qwen3",
                num_attention_heads=4, num_hidden_layers=2, num_key_value_heads=2, rms_norm_eps=1e-06,
                rope_scaling=None, rope_theta=1000000.0, sliding_window=None, tie_word_embeddings=True,
                use_sliding_window=False, vocab_size=100)


def cfg_gemma2():  # Gemma-2-2b: head_dim 256 with hidden 2304 / 8 heads, softcaps 50 / 30
    return dict(COMMON, architectures=["Gemma2ForCausalLM"], attention_bias=False, attn_logit_softcapping=1.5,
                bos_token_id=2, cache_implementation="hybrid", eos_token_id=[1, 107],
                final_logit_softcapping=3.0, head_dim=16, hidden_act="gelu_pytorch_tanh",
                hidden_activation="gelu_pytorch_tanh", hidden_size=32, intermediate_size=64,
                max_position_embeddings=128, model_type="gemma2", num_attention_heads=4, num_hidden_layers=3,
                num_key_value_heads=2, pad_token_id=0, query_pre_attn_scalar=16, rms_norm_eps=1e-06,
                rope_theta=10000.0, sliding_window=5, vocab_size=112)


def gemma3_text(qpas=16, layer_types=None, rope_scaling=None, final_cap=None, layers=6):
    """Gemma-3-1b / the text_config of Gemma-3-4b: q/k norms, local base 10000, global 1e6."""
    c = dict(COMMON, architectures=["Gemma3ForCausalLM"], attention_bias=False, attn_logit_softcapping=None,
             bos_token_id=2, cache_implementation="hybrid", eos_token_id=[1, 106],
             final_logit_softcapping=final_cap, head_dim=16, hidden_activation="gelu_pytorch_tanh",
             hidden_size=32, intermediate_size=64, max_position_embeddings=256, model_type="gemma3_text",
             num_attention_heads=4, num_hidden_layers=layers, num_key_value_heads=2, pad_token_id=0,
             query_pre_attn_scalar=qpas, rms_norm_eps=1e-06, rope_local_base_freq=10000.0,
             rope_scaling=rope_scaling, rope_theta=1000000.0, sliding_window=6, sliding_window_pattern=6,
             vocab_size=120)
    if layer_types:
        c["layer_types"] = layer_types
    return c


def cfg_gemma3():  # Gemma-3-4b's text part: linear rope_scaling factor 8 on the global layers
    return gemma3_text(rope_scaling={"factor": 8.0, "rope_type": "linear"})


def cfg_gemma3_qpas():  # query_pre_attn_scalar != head_dim (Gemma-3-27b: 168 vs 128), layer_types
    c = gemma3_text(qpas=24, layers=3, final_cap=4.0,
                    layer_types=["sliding_attention", "full_attention", "sliding_attention"])
    del c["sliding_window_pattern"]
    return c


def cfg_gemma3_mm():  # Gemma-3-4b-it: Gemma3ForConditionalGeneration, text_config + vision_config
    tc = dict(cfg_gemma3())
    for k in ("architectures", "torch_dtype", "transformers_version", "use_cache", "attention_dropout",
              "initializer_range"):
        tc.pop(k)
    return dict(architectures=["Gemma3ForConditionalGeneration"], boi_token_index=255999, eoi_token_index=256000,
                eos_token_id=[1, 106], image_token_index=262144, initializer_range=0.02, mm_tokens_per_image=256,
                model_type="gemma3", text_config=tc, torch_dtype="float32", transformers_version="4.51.3",
                vision_config={"hidden_size": 8, "image_size": 896, "intermediate_size": 16,
                               "model_type": "siglip_vision_model", "num_attention_heads": 2,
                               "num_hidden_layers": 1, "patch_size": 14, "vision_use_head": False})


def longrope_factors(n, rng):
    return [round(float(x), 4) for x in 1.0 + np.abs(rng.normal(0, 3.0, n))]


def cfg_phi3():  # Phi-4-mini / Phi-3.5-mini: partial rotary 0.75, longrope, window, GQA, untied
    rng = np.random.default_rng(907)
    rot_half = int(8 * 0.75) // 2
    return dict(COMMON, architectures=["Phi3ForCausalLM"], attention_bias=False, bos_token_id=1, embd_pdrop=0.0,
                eos_token_id=2, hidden_act="silu", hidden_size=32, intermediate_size=48,
                max_position_embeddings=128, model_type="phi3", num_attention_heads=4, num_hidden_layers=2,
                num_key_value_heads=2, original_max_position_embeddings=32, pad_token_id=2,
                partial_rotary_factor=0.75, resid_pdrop=0.0, rms_norm_eps=1e-05,
                rope_scaling={"long_factor": longrope_factors(rot_half, rng),
                              "short_factor": [round(float(x), 4) for x in 1.0 + np.abs(rng.normal(0, 0.3, rot_half))],
                              "type": "longrope"},
                rope_theta=10000.0, sliding_window=12, tie_word_embeddings=False, vocab_size=92)


def cfg_mistral():  # Mistral-7B-v0.1 (window 4096) with Mistral-Nemo's head_dim != hidden/heads
    return dict(COMMON, architectures=["MistralForCausalLM"], bos_token_id=1, eos_token_id=2, head_dim=12,
                hidden_act="silu", hidden_size=32, intermediate_size=64, max_position_embeddings=128,
                model_type="mistral", num_attention_heads=4, num_hidden_layers=2, num_key_value_heads=2,
                rms_norm_eps=1e-05, rope_theta=10000.0, sliding_window=8, tie_word_embeddings=False,
                vocab_size=84)


def cfg_smollm3():  # SmolLM3-3B: NoPE every 4th layer (no_rope_layers), tied
    return dict(COMMON, architectures=["SmolLM3ForCausalLM"], attention_bias=False, bos_token_id=1,
                eos_token_id=2, hidden_act="silu", hidden_size=32, intermediate_size=64,
                max_position_embeddings=128, mlp_bias=False, model_type="smollm3", no_rope_layer_interval=4,
                no_rope_layers=[1, 1, 1, 0], num_attention_heads=4, num_hidden_layers=4,
                num_key_value_heads=2, pad_token_id=3, rms_norm_eps=1e-06, rope_scaling=None,
                rope_theta=5000000.0, sliding_window=None, tie_word_embeddings=True,
                use_sliding_window=False, vocab_size=76,
                layer_types=["full_attention"] * 4)


# ---------------------------------------------------------------------------------------------
# GGUF copies (what convert_hf_to_gguf.py writes for each class; llama.cpp @ c392e50 for llama,
# qwen2, phi3, gemma2, and the current converter for qwen3 / gemma3 - see the README)


def base_kv(arch, cfg, head_dim_key=True):
    """Model.set_gguf_parameters: the keys every TextModel writes."""
    a = arch + "."
    kv = [(a + "block_count", T_U32, cfg["num_hidden_layers"]),
          (a + "context_length", T_U32, cfg["max_position_embeddings"]),
          (a + "embedding_length", T_U32, cfg["hidden_size"]),
          (a + "feed_forward_length", T_U32, cfg["intermediate_size"]),
          (a + "attention.head_count", T_U32, cfg["num_attention_heads"])]
    if cfg.get("num_key_value_heads") is not None:
        kv.append((a + "attention.head_count_kv", T_U32, cfg["num_key_value_heads"]))
    if cfg.get("rope_theta") is not None:
        kv.append((a + "rope.freq_base", T_F32, cfg["rope_theta"]))
    kv.append((a + "attention.layer_norm_rms_epsilon", T_F32, cfg["rms_norm_eps"]))
    if head_dim_key and cfg.get("head_dim") is not None:
        kv += [(a + "attention.key_length", T_U32, cfg["head_dim"]),
               (a + "attention.value_length", T_U32, cfg["head_dim"])]
    return kv


LLAMA_SUB = [("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
             ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
             ("post_attention_layernorm", "ffn_norm"), ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"),
             ("mlp.down_proj", "ffn_down"), ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm")]
GEMMA_SUB = [("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
             ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
             ("post_attention_layernorm", "post_attention_norm"), ("pre_feedforward_layernorm", "ffn_norm"),
             ("post_feedforward_layernorm", "post_ffw_norm"), ("mlp.gate_proj", "ffn_gate"),
             ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down"), ("self_attn.q_norm", "attn_q_norm"),
             ("self_attn.k_norm", "attn_k_norm")]
PHI3_SUB = [("input_layernorm", "attn_norm"), ("self_attn.qkv_proj", "attn_qkv"),
            ("self_attn.o_proj", "attn_output"), ("post_attention_layernorm", "ffn_norm"),
            ("mlp.gate_up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")]


def map_blocks(t, sub, transform=lambda hf, a: a):
    """HF tensor name -> GGUF name for the per-layer tensors and the globals; returns
    [(gguf name, array, hf name)]."""
    out = []
    for hf, a in t.items():
        if hf == "model.embed_tokens.weight":
            out.append(("token_embd.weight", transform(hf, a), hf))
        elif hf == "model.norm.weight":
            out.append(("output_norm.weight", transform(hf, a), hf))
        elif hf == "lm_head.weight":
            out.append(("output.weight", transform(hf, a), hf))
        else:
            parts = hf.split(".")
            assert parts[:2] == ["model", "layers"], hf
            rest, suffix = ".".join(parts[3:-1]), parts[-1]
            gg = dict(sub)[rest]
            out.append(("blk.%s.%s.%s" % (parts[2], gg, suffix), transform(hf, a), hf))
    return out


def llama3_rope_factors(cfg):
    """LlamaModel.generate_extra_tensors: one divisor per frequency (1 kept, factor scaled, in
    between 1 / ((1 - smooth) / factor + smooth)), from float32 frequencies as the converter
    computes them. original_max_position_embeddings is read from rope_scaling (llama.cpp
    c392e50 reads a top-level key and falls back to 8192; see the README)."""
    rs = cfg["rope_scaling"]
    dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = (1.0 / (np.float32(cfg["rope_theta"]) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim))))
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    out = []
    for f in freqs.astype(np.float64):
        wl = 2 * math.pi / f
        if wl < old / hi:
            out.append(1.0)
        elif wl > old / lo:
            out.append(factor)
        else:
            s = (old / wl - lo) / (hi - lo)
            out.append(1 / ((1 - s) / factor + s))
    return np.array(out, dtype=np.float32)


def gguf_llama(cfg, t):
    kv = base_kv("llama", cfg)
    D = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    kv += [("llama.vocab_size", T_U32, cfg["vocab_size"]), ("llama.rope.dimension_count", T_U32, D)]
    rs = cfg.get("rope_scaling") or {}
    if rs.get("type") == "linear" and "factor" in rs:
        kv += [("llama.rope.scaling.type", T_STRING, "linear"), ("llama.rope.scaling.factor", T_F32, rs["factor"])]
    H, Hkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads") or cfg["num_attention_heads"]

    def permute(hf, a):
        if ".q_proj." in hf:
            return gguf_write.llama_permute(a, H)
        if ".k_proj." in hf:
            return gguf_write.llama_permute(a, Hkv)
        return a
    extra = []
    if rs.get("rope_type") == "llama3":
        extra.append(("rope_freqs.weight", llama3_rope_factors(cfg), ""))
    return kv, extra, map_blocks(t, LLAMA_SUB, permute)


def gguf_qwen(cfg, t):
    arch = cfg["model_type"]
    return base_kv(arch, cfg), [], map_blocks(t, LLAMA_SUB)


def gemma_shift(hf, a):  # Gemma2Model / Gemma3Model.modify_tensors: every *norm.weight + 1
    return a + np.float32(1.0) if hf.endswith("norm.weight") else a


def gguf_gemma2(cfg, t):
    kv = [("gemma2.context_length", T_U32, cfg["max_position_embeddings"]),
          ("gemma2.embedding_length", T_U32, cfg["hidden_size"]),
          ("gemma2.block_count", T_U32, cfg["num_hidden_layers"]),
          ("gemma2.feed_forward_length", T_U32, cfg["intermediate_size"]),
          ("gemma2.attention.head_count", T_U32, cfg["num_attention_heads"]),
          ("gemma2.attention.head_count_kv", T_U32, cfg["num_key_value_heads"]),
          ("gemma2.attention.layer_norm_rms_epsilon", T_F32, cfg["rms_norm_eps"]),
          ("gemma2.attention.key_length", T_U32, cfg["head_dim"]),
          ("gemma2.attention.value_length", T_U32, cfg["head_dim"]),
          ("gemma2.attn_logit_softcapping", T_F32, cfg["attn_logit_softcapping"]),
          ("gemma2.final_logit_softcapping", T_F32, cfg["final_logit_softcapping"]),
          ("gemma2.attention.sliding_window", T_U32, cfg["sliding_window"])]
    return kv, [], map_blocks(t, GEMMA_SUB, gemma_shift)


def gguf_gemma3(cfg, t):
    kv = base_kv("gemma3", cfg, head_dim_key=False)
    kv = [e for e in kv if not e[0].endswith("rope.freq_base")]
    kv += [("gemma3.attention.key_length", T_U32, cfg["head_dim"]),
           ("gemma3.attention.value_length", T_U32, cfg["head_dim"]),
           ("gemma3.rope.freq_base", T_F32, cfg["rope_theta"])]
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) == "linear":
        kv += [("gemma3.rope.scaling.type", T_STRING, "linear"), ("gemma3.rope.scaling.factor", T_F32, rs["factor"])]
    if cfg.get("final_logit_softcapping"):
        kv.append(("gemma3.final_logit_softcapping", T_F32, cfg["final_logit_softcapping"]))
    kv.append(("gemma3.attention.sliding_window", T_U32, cfg["sliding_window"]))
    return kv, [], map_blocks(t, GEMMA_SUB, gemma_shift)


def gguf_phi3(cfg, t):
    Hd, H = cfg["hidden_size"], cfg["num_attention_heads"]
    rope_dims = int(cfg.get("partial_rotary_factor", 1.0) * Hd) // H
    kv = [("phi3.context_length", T_U32, cfg["max_position_embeddings"]),
          ("phi3.rope.scaling.original_context_length", T_U32, cfg["original_max_position_embeddings"]),
          ("phi3.embedding_length", T_U32, Hd),
          ("phi3.feed_forward_length", T_U32, cfg["intermediate_size"]),
          ("phi3.block_count", T_U32, cfg["num_hidden_layers"]),
          ("phi3.attention.head_count", T_U32, H),
          ("phi3.attention.head_count_kv", T_U32, cfg["num_key_value_heads"]),
          ("phi3.attention.layer_norm_rms_epsilon", T_F32, cfg["rms_norm_eps"]),
          ("phi3.rope.dimension_count", T_U32, rope_dims),
          ("phi3.rope.freq_base", T_F32, cfg["rope_theta"]),
          ("phi3.attention.sliding_window", T_U32, cfg.get("sliding_window") or 0)]
    extra = []
    rs = cfg.get("rope_scaling")
    if rs:
        scale = cfg["max_position_embeddings"] / cfg["original_max_position_embeddings"]
        orig = cfg["original_max_position_embeddings"]
        att = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0
        kv.append(("phi3.rope.scaling.attn_factor", T_F32, att))
        extra = [("rope_factors_long.weight", np.array(rs["long_factor"], dtype=np.float32), ""),
                 ("rope_factors_short.weight", np.array(rs["short_factor"], dtype=np.float32), "")]
    return kv, extra, map_blocks(t, PHI3_SUB)


GGUF_MAPPERS = {"llama": ("llama", gguf_llama), "qwen2": ("qwen2", gguf_qwen), "qwen3": ("qwen3", gguf_qwen),
                "gemma2": ("gemma2", gguf_gemma2), "gemma3_text": ("gemma3", gguf_gemma3),
                "phi3": ("phi3", gguf_phi3)}


def make_gguf(cfg, t, name):
    """All-F32 GGUF: general.* keys, the architecture keys, general.file_type 0; tensor order
    = the converter's (generate_extra_tensors first, then the sorted safetensors names); norms
    1-D F32. Returns (GGUFFile, stored) with stored the GGUF-named arrays."""
    arch, mapper = GGUF_MAPPERS[cfg["model_type"]]
    kv, extra, tl = mapper(cfg, t)
    g = gguf_write.GGUFFile(arch)
    g.add("general.type", T_STRING, "model")
    g.add("general.name", T_STRING, name)
    for k, ty, v in kv:
        g.add(k, ty, v)
    g.add("general.file_type", T_U32, 0)
    g.add("general.quantization_version", T_U32, gguf_write.GGML_QUANT_VERSION)
    g.add("general.alignment", T_U32, gguf_write.ALIGNMENT)
    stored = {}
    for gname, arr, _ in extra + sorted(tl, key=lambda e: e[2]):
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        g.add_tensor(gname, arr.shape, gguf_write.GGML_F32, arr.astype("<f4").tobytes())
        stored[gname] = arr
    return g, stored


def gguf_back_to_hf(cfg, stored, hf_names):
    """Undo the converter's layout changes (llama q/k permutation, Gemma's +1) so the HF
    reference forward can run on what a GGUF reader gets back."""
    mt = cfg["model_type"]
    sub = dict((gg, hf) for hf, gg in (GEMMA_SUB if mt.startswith("gemma") else
                                       PHI3_SUB if mt == "phi3" else LLAMA_SUB))
    H = cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    out = {}
    for gname, a in stored.items():
        if gname.startswith("rope_"):
            continue
        if gname == "token_embd.weight":
            hf = "model.embed_tokens.weight"
        elif gname == "output_norm.weight":
            hf = "model.norm.weight"
        elif gname == "output.weight":
            hf = "lm_head.weight"
        else:
            _, bid, gg, suffix = gname.split(".")
            hf = "model.layers.%s.%s.%s" % (bid, sub[gg], suffix)
        if mt.startswith("gemma") and hf.endswith("norm.weight"):
            a = a - np.float32(1.0)
        if mt == "llama" and ".q_proj." in hf:
            a = gguf_write.llama_unpermute(a, H)
        if mt == "llama" and ".k_proj." in hf:
            a = gguf_write.llama_unpermute(a, Hkv)
        out[hf] = a
    assert set(out) == set(hf_names), sorted(set(out) ^ set(hf_names))
    return out


# ---------------------------------------------------------------------------------------------
# variants: name, seed, config, features that must matter, GGUF?, extra (long) sequence length

VARIANTS = [
    ("llama3", 1101, cfg_llama3, ["rope_scaling"], True, 0),
    ("llama_linear", 1102, cfg_llama_linear, ["rope_scaling"], True, 0),
    ("qwen2", 1201, lambda: cfg_qwen2(False), [], True, 0),
    ("qwen2_swa", 1202, lambda: cfg_qwen2(True), ["window"], False, 0),
    ("qwen3", 1301, cfg_qwen3, ["qk_norm"], True, 0),
    ("gemma2", 1401, cfg_gemma2, ["window", "softcap", "post_norms"], True, 0),
    ("gemma3", 1501, cfg_gemma3, ["window", "qk_norm", "rope_scaling", "local_base", "post_norms"], True, 0),
    ("gemma3_qpas", 1502, cfg_gemma3_qpas, ["window", "attn_scale", "softcap"], False, 0),
    ("gemma3_mm", 1501, cfg_gemma3_mm, [], False, 0),
    ("phi3", 1601, cfg_phi3, ["window", "rope_scaling"], True, 48),
    ("mistral", 1701, cfg_mistral, ["window"], False, 0),
    ("smollm3", 1801, cfg_smollm3, ["nope"], False, 0),
]


def token_ids(rng, V, n):
    ids = [int(x) for x in rng.integers(0, V, size=n)]
    ids[0], ids[-1] = 0, V - 1   # the first and the last rows are used
    return ids


def write_ids(path, ids):
    with open(path, "w") as f:
        f.write(" ".join(str(x) for x in ids) + "\n")


def make_variant(root, name, seed, make_cfg, features, gguf, n_long):
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    cfg = make_cfg()
    g = Gen(seed)
    weights_for(cfg, g)
    V = (cfg.get("text_config") or cfg)["vocab_size"]
    ids = token_ids(np.random.default_rng(seed + 7), V, N_TOKENS)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    write_safetensors(os.path.join(folder, "model.safetensors"), g.t)
    back = gguf_write.read_safetensors(os.path.join(folder, "model.safetensors"))
    for k in g.t:
        assert np.array_equal(back[k], g.t[k]), k
    fwd = FORWARD[cfg["model_type"]]
    if cfg["model_type"] == "phi3":  # a short run stays on short_factor: within original_max
        ids = ids[:24]
        ids[-1] = V - 1
    write_ids(os.path.join(folder, "tokens.txt"), ids)
    logits = fwd(cfg, back, ids)
    logits.astype("<f4").tofile(os.path.join(folder, "logits.f32"))
    report = ["%-12s %d tokens |logits| <= %6.3f" % (name, len(ids), np.abs(logits).max())]
    if cfg["model_type"] == "gemma3":  # the same weights and tokens as gemma3/: the same logits
        text_only = np.fromfile(os.path.join(root, "gemma3", "logits.f32"), dtype="<f4")
        assert np.array_equal(text_only, logits.astype("<f4").reshape(-1))
        report.append("= gemma3")
    for feat in features:
        d = np.abs(fwd(cfg, back, ids, off=(feat,)) - logits).max()
        assert d > FEATURE_MIN, (name, feat, d)
        report.append("%s %.2g" % (feat, d))
    if cfg["model_type"] == "qwen2" and not cfg["use_sliding_window"]:
        # sliding_window is set but use_sliding_window is false: the window must not apply
        assert np.array_equal(fwd(cfg, back, ids, off=("window",)), logits)
    if n_long:
        lids = token_ids(np.random.default_rng(seed + 8), V, n_long)
        write_ids(os.path.join(folder, "tokens_long.txt"), lids)
        ll = fwd(cfg, back, lids)
        ll.astype("<f4").tofile(os.path.join(folder, "logits_long.f32"))
        # past original_max_position_embeddings the long factors apply to every position
        short = cfg["rope_scaling"]["short_factor"]
        c2 = dict(cfg, rope_scaling=dict(cfg["rope_scaling"], long_factor=short))
        d = np.abs(fwd(c2, back, lids) - ll).max()
        assert d > FEATURE_MIN, (name, "long_factor", d)
        report.append("long %d tokens: long_factor %.2g" % (n_long, d))
    if gguf:
        gg, stored = make_gguf(cfg, back, name)
        gg.write(os.path.join(folder, "model.gguf"))
        lg = fwd(cfg, gguf_back_to_hf(cfg, stored, list(back)), ids)
        assert np.array_equal(lg, logits), np.abs(lg - logits).max()
        report.append("gguf ok")
    print("  ".join(report))


def check(root):
    """Re-read every folder, recompute the logits from the files and compare bit for bit."""
    ok = True
    for name, *_ in VARIANTS:
        folder = os.path.join(root, name)
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        t = gguf_write.read_safetensors(os.path.join(folder, "model.safetensors"))
        V = (cfg.get("text_config") or cfg)["vocab_size"]
        for tok, lg in (("tokens.txt", "logits.f32"), ("tokens_long.txt", "logits_long.f32")):
            if not os.path.exists(os.path.join(folder, tok)):
                continue
            with open(os.path.join(folder, tok)) as f:
                ids = [int(x) for x in f.read().split()]
            want = np.fromfile(os.path.join(folder, lg), dtype="<f4").reshape(len(ids), V)
            got = FORWARD[cfg["model_type"]](cfg, t, ids).astype(np.float32)
            d = np.abs(got - want).max()
            ok &= d == 0
            print("%-12s %-16s %d tokens, vocab %d, recomputed |diff| %.1e" % (name, lg, len(ids), V, d))
    return ok


def main(argv):
    root = os.path.join(HERE, "..", "data", "modern")
    if len(argv) > 1 and argv[1] == "--check":
        return 0 if check(argv[2] if len(argv) > 2 else root) else 1
    if len(argv) > 1:
        root = argv[1]
    only = argv[2:]
    for v in VARIANTS:
        if not only or v[0] in only:
            make_variant(root, *v)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
