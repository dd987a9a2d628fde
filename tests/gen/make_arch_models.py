#!/usr/bin/python3
"""make_arch_models.py - tiny Hugging Face-layout checkpoints of gpt2, llama, phi, starcoder2,
gptj and gpt_neox with float64 NumPy reference logits, plus GGUF copies of gpt2 / llama /
gpt_neox (tests/gen/gguf_write.py). Output: tests/data/models/NAME/ (see tests/data/models/README.md).

    /usr/bin/python3 tests/gen/make_arch_models.py [OUT_ROOT]     (default tests/data/models)
    /usr/bin/python3 tests/gen/make_arch_models.py --check [ROOT] (re-read every folder, recompute)
    /usr/bin/python3 tests/gen/make_arch_models.py --torch-check [ROOT] (second forward, torch ops)

Every reference forward below is written from the architecture's transformers modeling file
(module by module, with the checkpoint's own tensor names and layouts), in float64 on the float32
values stored in model.safetensors. No code is shared between architectures except the textbook
pieces (LayerNorm, RMSNorm, the GELU forms, causal softmax attention), so a layout mistake in one
reference cannot hide in another. Seeds are fixed; the output is byte-for-byte reproducible.
"""
import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_write  # noqa: E402

N_TOKENS = 24

# ---------------------------------------------------------------------------------------------
# safetensors writer (format: REFERENCE.md E.1). Tensors sorted by name (the Rust writer sorts by
# dtype alignment, then name; all ours are F32), header padded with spaces to a multiple of 8.


def write_safetensors(path, tensors):
    tensors = sorted(tensors, key=lambda t: t[0])
    header = {"__metadata__": {"format": "pt"}}
    blobs, off = [], 0
    for name, arr in tensors:
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


def layer_norm(x, w, b, eps):  # torch.nn.LayerNorm: biased variance
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):  # LlamaRMSNorm
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def gelu_tanh(x):  # gelu_new == gelu_pytorch_tanh (same formula)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


_erf = np.vectorize(math.erf)


def gelu_erf(x):  # "gelu"
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def causal_attention(q, k, v, scale):
    """q [T, H, D]; k, v [T, Hkv, D]. Query head h reads kv head h // (H / Hkv) (repeat_kv)."""
    T, H, D = q.shape
    rep = H // k.shape[1]
    out = np.zeros((T, H, v.shape[2]))
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for h in range(H):
        s = q[:, h, :] @ k[:, h // rep, :].T * scale + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        p = s / s.sum(-1, keepdims=True)
        out[:, h, :] = p @ v[:, h // rep, :]
    return out.reshape(T, H * v.shape[2])


def rope_half(x, pos, rot, base):
    """HF rotate_half RoPE on the first `rot` dims of every head. x [T, H, D]."""
    inv_freq = 1.0 / base ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    ang = pos[:, None] * inv_freq[None, :]          # [T, rot/2]
    emb = np.concatenate([ang, ang], -1)              # [T, rot]
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]
    xr, xp = x[..., :rot], x[..., rot:]
    x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:]
    rotated = np.concatenate([-x2, x1], -1)
    return np.concatenate([xr * cos + rotated * sin, xp], -1)


def rope_interleaved(x, pos, rot, base):
    """GPT-J rotate_every_two on the first `rot` dims (pairs 2j, 2j+1). x [T, H, D]."""
    inv_freq = 1.0 / base ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    ang = pos[:, None] * inv_freq[None, :]
    cos = np.repeat(np.cos(ang), 2, axis=-1)[:, None, :]   # repeat_interleave
    sin = np.repeat(np.sin(ang), 2, axis=-1)[:, None, :]
    xr, xp = x[..., :rot], x[..., rot:]
    x1, x2 = xr[..., 0::2], xr[..., 1::2]
    rotated = np.stack([-x2, x1], -1).reshape(xr.shape)
    return np.concatenate([xr * cos + rotated * sin, xp], -1)


def W(t, name):
    return t[name].astype(np.float64)


# ---------------------------------------------------------------------------------------------
# reference forwards, one per transformers modeling file. t: name -> float32 array (as stored).


def forward_gpt2(cfg, t, ids):
    """modeling_gpt2.py: GPT2LMHeadModel. Conv1D y = x @ W + b with W [in, out]; c_attn output
    split into q | k | v (n_embd each); learned wpe; gelu_new; tied lm_head = wte."""
    p = "transformer." if "transformer.wte.weight" in t else ""
    C, H = cfg["n_embd"], cfg["n_head"]
    D = C // H
    eps = cfg["layer_norm_epsilon"]
    assert cfg["activation_function"] == "gelu_new" and cfg["scale_attn_weights"]
    assert not cfg.get("scale_attn_by_inverse_layer_idx")
    T = len(ids)
    h = W(t, p + "wte.weight")[ids] + W(t, p + "wpe.weight")[np.arange(T)]
    for i in range(cfg["n_layer"]):
        L = "%sh.%d." % (p, i)
        a = layer_norm(h, W(t, L + "ln_1.weight"), W(t, L + "ln_1.bias"), eps)
        qkv = a @ W(t, L + "attn.c_attn.weight") + W(t, L + "attn.c_attn.bias")
        q, k, v = (qkv[:, j * C:(j + 1) * C].reshape(T, H, D) for j in range(3))
        o = causal_attention(q, k, v, 1.0 / math.sqrt(D))
        h = h + o @ W(t, L + "attn.c_proj.weight") + W(t, L + "attn.c_proj.bias")
        m = layer_norm(h, W(t, L + "ln_2.weight"), W(t, L + "ln_2.bias"), eps)
        m = gelu_tanh(m @ W(t, L + "mlp.c_fc.weight") + W(t, L + "mlp.c_fc.bias"))
        h = h + m @ W(t, L + "mlp.c_proj.weight") + W(t, L + "mlp.c_proj.bias")
    h = layer_norm(h, W(t, p + "ln_f.weight"), W(t, p + "ln_f.bias"), eps)
    return h @ W(t, p + "wte.weight").T


def forward_llama(cfg, t, ids):
    """modeling_llama.py: LlamaForCausalLM. RMSNorm; q/k/v/o nn.Linear (no bias);
    rotate_half RoPE over head_dim with rope_theta; GQA repeat_kv; SwiGLU; lm_head or tied."""
    Hd, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    D = cfg.get("head_dim") or Hd // H
    eps = cfg["rms_norm_eps"]
    assert cfg["hidden_act"] == "silu" and not cfg["attention_bias"] and not cfg["mlp_bias"]
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    h = W(t, "model.embed_tokens.weight")[ids]
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        x = rms_norm(h, W(t, L + "input_layernorm.weight"), eps)
        q = (x @ W(t, L + "self_attn.q_proj.weight").T).reshape(T, H, D)
        k = (x @ W(t, L + "self_attn.k_proj.weight").T).reshape(T, Hkv, D)
        v = (x @ W(t, L + "self_attn.v_proj.weight").T).reshape(T, Hkv, D)
        q = rope_half(q, pos, D, cfg["rope_theta"])
        k = rope_half(k, pos, D, cfg["rope_theta"])
        h = h + causal_attention(q, k, v, 1.0 / math.sqrt(D)) @ W(t, L + "self_attn.o_proj.weight").T
        x = rms_norm(h, W(t, L + "post_attention_layernorm.weight"), eps)
        g = silu(x @ W(t, L + "mlp.gate_proj.weight").T) * (x @ W(t, L + "mlp.up_proj.weight").T)
        h = h + g @ W(t, L + "mlp.down_proj.weight").T
    h = rms_norm(h, W(t, "model.norm.weight"), eps)
    head = W(t, "model.embed_tokens.weight") if cfg["tie_word_embeddings"] else W(t, "lm_head.weight")
    return h @ head.T


def forward_phi(cfg, t, ids):
    """modeling_phi.py: PhiForCausalLM (Phi-2 layout). One input_layernorm feeds attention and
    MLP in parallel; q/k/v/dense with bias; partial rotary: rotate_half over the first
    int(head_dim * partial_rotary_factor) dims; fc1 -> gelu_new -> fc2; final_layernorm;
    lm_head with bias."""
    Hd, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    D = Hd // H
    rot = int(D * cfg["partial_rotary_factor"])
    eps = cfg["layer_norm_eps"]
    assert cfg["hidden_act"] == "gelu_new" and not cfg["qk_layernorm"]
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    h = W(t, "model.embed_tokens.weight")[ids]
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        x = layer_norm(h, W(t, L + "input_layernorm.weight"), W(t, L + "input_layernorm.bias"), eps)

        def lin(name, a):
            return a @ W(t, L + name + ".weight").T + W(t, L + name + ".bias")
        q = lin("self_attn.q_proj", x).reshape(T, H, D)
        k = lin("self_attn.k_proj", x).reshape(T, Hkv, D)
        v = lin("self_attn.v_proj", x).reshape(T, Hkv, D)
        q = rope_half(q, pos, rot, cfg["rope_theta"])
        k = rope_half(k, pos, rot, cfg["rope_theta"])
        attn = lin("self_attn.dense", causal_attention(q, k, v, 1.0 / math.sqrt(D)))
        mlp = lin("mlp.fc2", gelu_tanh(lin("mlp.fc1", x)))
        h = h + attn + mlp
    h = layer_norm(h, W(t, "model.final_layernorm.weight"), W(t, "model.final_layernorm.bias"), eps)
    return h @ W(t, "lm_head.weight").T + W(t, "lm_head.bias")


def forward_starcoder2(cfg, t, ids):
    """modeling_starcoder2.py: Starcoder2ForCausalLM. LayerNorm (w+b, norm_epsilon); sequential;
    q/k/v/o with bias (use_bias); GQA; rotate_half RoPE over head_dim with rope_theta;
    c_fc -> gelu_pytorch_tanh -> c_proj (nn.Linear, bias); model.norm; tied head."""
    Hd, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg["num_key_value_heads"]
    D = Hd // H
    eps = cfg["norm_epsilon"]
    assert cfg["hidden_act"] == "gelu_pytorch_tanh" and cfg["use_bias"] and cfg["tie_word_embeddings"]
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    h = W(t, "model.embed_tokens.weight")[ids]
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i

        def lin(name, a):
            return a @ W(t, L + name + ".weight").T + W(t, L + name + ".bias")
        x = layer_norm(h, W(t, L + "input_layernorm.weight"), W(t, L + "input_layernorm.bias"), eps)
        q = rope_half(lin("self_attn.q_proj", x).reshape(T, H, D), pos, D, cfg["rope_theta"])
        k = rope_half(lin("self_attn.k_proj", x).reshape(T, Hkv, D), pos, D, cfg["rope_theta"])
        v = lin("self_attn.v_proj", x).reshape(T, Hkv, D)
        h = h + lin("self_attn.o_proj", causal_attention(q, k, v, 1.0 / math.sqrt(D)))
        x = layer_norm(h, W(t, L + "post_attention_layernorm.weight"),
                       W(t, L + "post_attention_layernorm.bias"), eps)
        h = h + lin("mlp.c_proj", gelu_tanh(lin("mlp.c_fc", x)))
    h = layer_norm(h, W(t, "model.norm.weight"), W(t, "model.norm.bias"), eps)
    return h @ W(t, "model.embed_tokens.weight").T


def forward_gptj(cfg, t, ids):
    """modeling_gptj.py: GPTJForCausalLM. ln_1 feeds attention and MLP in parallel; q/k/v/out_proj
    without bias; rotate_every_two (interleaved) RoPE on the first rotary_dim dims of each head,
    base fixed at 10000 (create_sinusoidal_positions); fc_in -> gelu_new -> fc_out (bias);
    ln_f; lm_head with bias."""
    C, H = cfg["n_embd"], cfg["n_head"]
    D = C // H
    rot = cfg["rotary_dim"] or D
    eps = cfg["layer_norm_epsilon"]
    assert cfg["activation_function"] == "gelu_new"
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    h = W(t, "transformer.wte.weight")[ids]
    for i in range(cfg["n_layer"]):
        L = "transformer.h.%d." % i
        x = layer_norm(h, W(t, L + "ln_1.weight"), W(t, L + "ln_1.bias"), eps)
        q = (x @ W(t, L + "attn.q_proj.weight").T).reshape(T, H, D)
        k = (x @ W(t, L + "attn.k_proj.weight").T).reshape(T, H, D)
        v = (x @ W(t, L + "attn.v_proj.weight").T).reshape(T, H, D)
        q = rope_interleaved(q, pos, rot, 10000.0)
        k = rope_interleaved(k, pos, rot, 10000.0)
        attn = causal_attention(q, k, v, 1.0 / math.sqrt(D)) @ W(t, L + "attn.out_proj.weight").T
        m = gelu_tanh(x @ W(t, L + "mlp.fc_in.weight").T + W(t, L + "mlp.fc_in.bias"))
        mlp = m @ W(t, L + "mlp.fc_out.weight").T + W(t, L + "mlp.fc_out.bias")
        h = h + attn + mlp
    h = layer_norm(h, W(t, "transformer.ln_f.weight"), W(t, "transformer.ln_f.bias"), eps)
    return h @ W(t, "lm_head.weight").T + W(t, "lm_head.bias")


def forward_gpt_neox(cfg, t, ids):
    """modeling_gpt_neox.py: GPTNeoXForCausalLM. query_key_value output viewed as
    [heads, 3 * head_size] (per head q, k, v); rotate_half RoPE on the first
    int(head_size * rotary_pct) dims, base rotary_emb_base; parallel residual with two
    LayerNorms (input_layernorm -> attention, post_attention_layernorm -> MLP); exact-erf gelu;
    untied embed_out."""
    Hd, H = cfg["hidden_size"], cfg["num_attention_heads"]
    D = Hd // H
    rot = int(D * cfg["rotary_pct"])
    eps = cfg["layer_norm_eps"]
    assert cfg["hidden_act"] == "gelu" and cfg["use_parallel_residual"] and cfg["attention_bias"]
    T = len(ids)
    pos = np.arange(T, dtype=np.float64)
    h = W(t, "gpt_neox.embed_in.weight")[ids]
    for i in range(cfg["num_hidden_layers"]):
        L = "gpt_neox.layers.%d." % i

        def lin(name, a):
            return a @ W(t, L + name + ".weight").T + W(t, L + name + ".bias")
        x = layer_norm(h, W(t, L + "input_layernorm.weight"), W(t, L + "input_layernorm.bias"), eps)
        qkv = lin("attention.query_key_value", x).reshape(T, H, 3 * D)
        q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]
        q = rope_half(q, pos, rot, cfg["rotary_emb_base"])
        k = rope_half(k, pos, rot, cfg["rotary_emb_base"])
        attn = lin("attention.dense", causal_attention(q, k, v, 1.0 / math.sqrt(D)))
        y = layer_norm(h, W(t, L + "post_attention_layernorm.weight"),
                       W(t, L + "post_attention_layernorm.bias"), eps)
        mlp = lin("mlp.dense_4h_to_h", gelu_erf(lin("mlp.dense_h_to_4h", y)))
        h = h + attn + mlp
    h = layer_norm(h, W(t, "gpt_neox.final_layer_norm.weight"), W(t, "gpt_neox.final_layer_norm.bias"), eps)
    return h @ W(t, "embed_out.weight").T


FORWARD = {"gpt2": forward_gpt2, "llama": forward_llama, "phi": forward_phi,
           "starcoder2": forward_starcoder2, "gptj": forward_gptj, "gpt_neox": forward_gpt_neox}


# ---------------------------------------------------------------------------------------------
# weights. Matrices ~N(0, 0.2); norm weights 1 + N(0, 0.1); biases N(0, 0.1) (nonzero, so a
# dropped bias shows). Same convention as tests/gen/make_test_models.py.


class Gen:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.t = []

    def mat(self, name, rows, cols):
        self.t.append((name, self.rng.normal(0.0, 0.2, size=(rows, cols)).astype(np.float32)))

    def norm(self, name, n, bias=True):
        self.t.append((name + ".weight", (1.0 + self.rng.normal(0.0, 0.1, size=n)).astype(np.float32)))
        if bias:
            self.t.append((name + ".bias", self.rng.normal(0.0, 0.1, size=n).astype(np.float32)))

    def vec(self, name, n):
        self.t.append((name, self.rng.normal(0.0, 0.1, size=n).astype(np.float32)))

    def linear(self, name, out, inp, bias=True):  # nn.Linear: weight [out, in]
        self.mat(name + ".weight", out, inp)
        if bias:
            self.vec(name + ".bias", out)

    def conv1d(self, name, inp, out):  # transformers Conv1D: weight [in, out], bias [out]
        self.mat(name + ".weight", inp, out)
        self.vec(name + ".bias", out)


def gpt2_weights(cfg, g, prefix):
    C, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    F = cfg.get("n_inner") or 4 * C
    g.mat(prefix + "wte.weight", V, C)
    g.mat(prefix + "wpe.weight", P, C)
    for i in range(cfg["n_layer"]):
        L = "%sh.%d." % (prefix, i)
        g.norm(L + "ln_1", C)
        g.conv1d(L + "attn.c_attn", C, 3 * C)
        g.conv1d(L + "attn.c_proj", C, C)
        g.norm(L + "ln_2", C)
        g.conv1d(L + "mlp.c_fc", C, F)
        g.conv1d(L + "mlp.c_proj", F, C)
    g.norm(prefix + "ln_f", C)


def llama_weights(cfg, g):
    Hd, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = Hd // H
    g.mat("model.embed_tokens.weight", V, Hd)
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        g.norm(L + "input_layernorm", Hd, bias=False)
        g.linear(L + "self_attn.q_proj", H * D, Hd, bias=False)
        g.linear(L + "self_attn.k_proj", Hkv * D, Hd, bias=False)
        g.linear(L + "self_attn.v_proj", Hkv * D, Hd, bias=False)
        g.linear(L + "self_attn.o_proj", Hd, H * D, bias=False)
        g.norm(L + "post_attention_layernorm", Hd, bias=False)
        g.linear(L + "mlp.gate_proj", F, Hd, bias=False)
        g.linear(L + "mlp.up_proj", F, Hd, bias=False)
        g.linear(L + "mlp.down_proj", Hd, F, bias=False)
    g.norm("model.norm", Hd, bias=False)
    if not cfg["tie_word_embeddings"]:
        g.mat("lm_head.weight", V, Hd)


def phi_weights(cfg, g):
    Hd, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    g.mat("model.embed_tokens.weight", V, Hd)
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        g.norm(L + "input_layernorm", Hd)
        for n in ("q_proj", "k_proj", "v_proj", "dense"):
            g.linear(L + "self_attn." + n, Hd, Hd)
        g.linear(L + "mlp.fc1", F, Hd)
        g.linear(L + "mlp.fc2", Hd, F)
    g.norm("model.final_layernorm", Hd)
    g.linear("lm_head", V, Hd)


def starcoder2_weights(cfg, g):
    Hd, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = Hd // H
    g.mat("model.embed_tokens.weight", V, Hd)
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        g.norm(L + "input_layernorm", Hd)
        g.linear(L + "self_attn.q_proj", H * D, Hd)
        g.linear(L + "self_attn.k_proj", Hkv * D, Hd)
        g.linear(L + "self_attn.v_proj", Hkv * D, Hd)
        g.linear(L + "self_attn.o_proj", Hd, H * D)
        g.norm(L + "post_attention_layernorm", Hd)
        g.linear(L + "mlp.c_fc", F, Hd)
        g.linear(L + "mlp.c_proj", Hd, F)
    g.norm("model.norm", Hd)


def gptj_weights(cfg, g):
    C, V = cfg["n_embd"], cfg["vocab_size"]
    F = cfg.get("n_inner") or 4 * C
    g.mat("transformer.wte.weight", V, C)
    for i in range(cfg["n_layer"]):
        L = "transformer.h.%d." % i
        g.norm(L + "ln_1", C)
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            g.linear(L + "attn." + n, C, C, bias=False)
        g.linear(L + "mlp.fc_in", F, C)
        g.linear(L + "mlp.fc_out", C, F)
    g.norm("transformer.ln_f", C)
    g.linear("lm_head", V, C)


def gpt_neox_weights(cfg, g):
    Hd, V, F = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    g.mat("gpt_neox.embed_in.weight", V, Hd)
    for i in range(cfg["num_hidden_layers"]):
        L = "gpt_neox.layers.%d." % i
        g.norm(L + "input_layernorm", Hd)
        g.norm(L + "post_attention_layernorm", Hd)
        g.linear(L + "attention.query_key_value", 3 * Hd, Hd)
        g.linear(L + "attention.dense", Hd, Hd)
        g.linear(L + "mlp.dense_h_to_4h", F, Hd)
        g.linear(L + "mlp.dense_4h_to_h", Hd, F)
    g.norm("gpt_neox.final_layer_norm", Hd)
    g.mat("embed_out.weight", V, Hd)


# ---------------------------------------------------------------------------------------------
# configs (real Hugging Face key names; values of the released models where they do not matter)


def cfg_gpt2(vocab, d=32, ctx=64):
    return {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
            "attn_pdrop": 0.1, "bos_token_id": vocab - 1, "embd_pdrop": 0.1, "eos_token_id": vocab - 1,
            "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
            "n_ctx": ctx, "n_embd": d, "n_head": 4, "n_inner": None, "n_layer": 2, "n_positions": ctx,
            "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
            "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
            "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
            "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": "float32",
            "transformers_version": "4.44.0", "use_cache": True, "vocab_size": vocab}


def cfg_llama(tied, theta):
    c = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
            "bos_token_id": 1, "eos_token_id": 2, "head_dim": 8, "hidden_act": "silu", "hidden_size": 32,
            "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 64,
            "mlp_bias": False, "model_type": "llama", "num_attention_heads": 4,
            "num_hidden_layers": 2, "num_key_value_heads": 2, "pretraining_tp": 1,
            "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": theta,
            "tie_word_embeddings": tied, "torch_dtype": "float32", "transformers_version": "4.44.0",
            "use_cache": True, "vocab_size": 112 if tied else 120}
    if tied:
        del c["head_dim"]  # older configs have no head_dim key: hidden_size / heads
    return c


def cfg_phi():
    return {"architectures": ["PhiForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
            "embd_pdrop": 0.0, "eos_token_id": 2, "hidden_act": "gelu_new", "hidden_size": 48,
            "initializer_range": 0.02, "intermediate_size": 64, "layer_norm_eps": 1e-05,
            "max_position_embeddings": 64, "model_type": "phi", "num_attention_heads": 4,
            "num_hidden_layers": 2, "num_key_value_heads": 4, "partial_rotary_factor": 0.4,
            "qk_layernorm": False, "resid_pdrop": 0.1, "rope_scaling": None, "rope_theta": 10000.0,
            "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.44.0",
            "use_cache": True, "vocab_size": 100}


def cfg_starcoder2():
    return {"architectures": ["Starcoder2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 0,
            "embedding_dropout": 0.0, "eos_token_id": 0, "hidden_act": "gelu_pytorch_tanh",
            "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
            "max_position_embeddings": 64, "mlp_type": "default", "model_type": "starcoder2",
            "norm_epsilon": 1e-05, "norm_type": "layer_norm", "num_attention_heads": 4,
            "num_hidden_layers": 2, "num_key_value_heads": 2, "residual_dropout": 0.0,
            "rope_theta": 100000, "sliding_window": 4096, "tie_word_embeddings": True,
            "torch_dtype": "float32", "transformers_version": "4.44.0", "use_bias": True,
            "use_cache": True, "vocab_size": 104}


def cfg_gptj():
    return {"activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"], "attn_pdrop": 0.0,
            "bos_token_id": 0, "embd_pdrop": 0.0, "eos_token_id": 0, "initializer_range": 0.02,
            "layer_norm_epsilon": 1e-05, "model_type": "gptj", "n_embd": 32, "n_head": 4,
            "n_inner": 64, "n_layer": 2, "n_positions": 64, "resid_pdrop": 0.0, "rotary_dim": 4,
            "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.44.0",
            "use_cache": True, "vocab_size": 108}


def cfg_gpt_neox():
    return {"architectures": ["GPTNeoXForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
            "bos_token_id": 0, "classifier_dropout": 0.1, "eos_token_id": 0, "hidden_act": "gelu",
            "hidden_dropout": 0.0, "hidden_size": 32, "initializer_range": 0.02,
            "intermediate_size": 64, "layer_norm_eps": 1e-05, "max_position_embeddings": 64,
            "model_type": "gpt_neox", "num_attention_heads": 2, "num_hidden_layers": 2,
            "rope_scaling": None, "rotary_emb_base": 10000, "rotary_pct": 0.25,
            "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.44.0",
            "use_cache": True, "use_parallel_residual": True, "vocab_size": 96}


# name, seed, config, weight builder, GGUF file types to write
VARIANTS = [
    ("gpt2", 201, cfg_gpt2(96), lambda c, g: gpt2_weights(c, g, ""), ["f32", "f16"]),
    ("gpt2_prefixed", 202, cfg_gpt2(64, 16, 32), lambda c, g: gpt2_weights(c, g, "transformer."), []),
    ("llama_tied", 301, cfg_llama(True, 10000.0), llama_weights, ["f32", "q8_0"]),
    ("llama_untied", 302, cfg_llama(False, 500000.0), llama_weights, ["f32", "q8_0"]),
    ("phi", 401, cfg_phi(), phi_weights, []),
    ("starcoder2", 501, cfg_starcoder2(), starcoder2_weights, []),
    ("gptj", 601, cfg_gptj(), gptj_weights, []),
    ("gpt_neox", 701, cfg_gpt_neox(), gpt_neox_weights, ["f32"]),
]

GGUF_NAME = {"f32": "model.gguf", "f16": "model-f16.gguf", "q8_0": "model-q8_0.gguf"}
GGUF_LOGITS = {"f16": "logits_f16.f32", "q8_0": "logits_q8.f32"}


def gguf_to_hf(cfg, stored, hf_names):
    """Undo the converter's layout changes on the values a GGUF reader gets back, giving HF-named
    tensors, so the HF reference forward computes the logits the GGUF file must produce."""
    arch = cfg["model_type"]
    if arch == "gpt2":
        p = "transformer." if "transformer.wte.weight" in hf_names else ""
        out = {p + "wte.weight": stored["token_embd.weight"], p + "wpe.weight": stored["position_embd.weight"],
               p + "ln_f.weight": stored["output_norm.weight"], p + "ln_f.bias": stored["output_norm.bias"]}
        # the reference uses wte for the head; the file's output.weight must be the same values
        assert np.array_equal(stored["output.weight"], stored["token_embd.weight"])
        sub = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
               "ln_2": "ffn_norm", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
        for i in range(cfg["n_layer"]):
            for hf, gg in sub.items():
                w = stored["blk.%d.%s.weight" % (i, gg)]
                out["%sh.%d.%s.weight" % (p, i, hf)] = w if hf.startswith("ln") else w.T
                out["%sh.%d.%s.bias" % (p, i, hf)] = stored["blk.%d.%s.bias" % (i, gg)]
    elif arch == "llama":
        H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        out = {"model.embed_tokens.weight": stored["token_embd.weight"],
               "model.norm.weight": stored["output_norm.weight"]}
        if "output.weight" in stored:
            out["lm_head.weight"] = stored["output.weight"]
        for i in range(cfg["num_hidden_layers"]):
            L, B = "model.layers.%d." % i, "blk.%d." % i
            out[L + "input_layernorm.weight"] = stored[B + "attn_norm.weight"]
            out[L + "self_attn.q_proj.weight"] = gguf_write.llama_unpermute(stored[B + "attn_q.weight"], H)
            out[L + "self_attn.k_proj.weight"] = gguf_write.llama_unpermute(stored[B + "attn_k.weight"], Hkv)
            out[L + "self_attn.v_proj.weight"] = stored[B + "attn_v.weight"]
            out[L + "self_attn.o_proj.weight"] = stored[B + "attn_output.weight"]
            out[L + "post_attention_layernorm.weight"] = stored[B + "ffn_norm.weight"]
            out[L + "mlp.gate_proj.weight"] = stored[B + "ffn_gate.weight"]
            out[L + "mlp.up_proj.weight"] = stored[B + "ffn_up.weight"]
            out[L + "mlp.down_proj.weight"] = stored[B + "ffn_down.weight"]
    elif arch == "gpt_neox":
        H = cfg["num_attention_heads"]
        out = {"gpt_neox.embed_in.weight": stored["token_embd.weight"],
               "gpt_neox.final_layer_norm.weight": stored["output_norm.weight"],
               "gpt_neox.final_layer_norm.bias": stored["output_norm.bias"],
               "embed_out.weight": stored["output.weight"]}
        sub = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
               "attention.dense": "attn_output", "mlp.dense_h_to_4h": "ffn_up",
               "mlp.dense_4h_to_h": "ffn_down"}
        for i in range(cfg["num_hidden_layers"]):
            L, B = "gpt_neox.layers.%d." % i, "blk.%d." % i
            for hf, gg in sub.items():
                out[L + hf + ".weight"] = stored[B + gg + ".weight"]
                out[L + hf + ".bias"] = stored[B + gg + ".bias"]
            for s in ("weight", "bias"):
                out[L + "attention.query_key_value." + s] = gguf_write.neox_thirds_to_qkv(
                    stored[B + "attn_qkv." + s], H)
    assert set(out) == set(hf_names), sorted(set(out) ^ set(hf_names))
    return out


def make_variant(root, name, seed, cfg, builder, gguf_types):
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    g = Gen(seed)
    builder(cfg, g)
    tensors = dict(g.t)
    assert len(tensors) == len(g.t)
    V = cfg["vocab_size"]
    ids = [int(x) for x in g.rng.integers(0, V, size=N_TOKENS)]
    ids[0], ids[-1] = 0, V - 1   # the first and the last rows are used
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    write_safetensors(os.path.join(folder, "model.safetensors"), g.t)
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write(" ".join(str(t) for t in ids) + "\n")
    fwd = FORWARD[cfg["model_type"]]
    back = gguf_write.read_safetensors(os.path.join(folder, "model.safetensors"))
    for k in tensors:
        assert np.array_equal(back[k], tensors[k]), k
    logits = fwd(cfg, back, ids)
    logits.astype("<f4").tofile(os.path.join(folder, "logits.f32"))
    report = ["%-14s logits |max| %6.3f" % (name, np.abs(logits).max())]
    for ft in gguf_types:
        gg, stored = gguf_write.convert(cfg, back, ft, name=name)
        gg.write(os.path.join(folder, GGUF_NAME[ft]))
        hf = gguf_to_hf(cfg, stored, list(back))
        lg = fwd(cfg, hf, ids)
        if ft == "f32":
            # lossless: the same weights, so the same logits (the layout change is exact)
            assert np.array_equal(lg, logits), np.abs(lg - logits).max()
        else:
            lg.astype("<f4").tofile(os.path.join(folder, GGUF_LOGITS[ft]))
        report.append("%s: max |diff| vs f32 logits %.2e" % (ft, np.abs(lg - logits).max()))
    print("  ".join(report))
    return folder


def check(root):
    """Re-read every folder, recompute the logits from the files and compare."""
    ok = True
    for name, _, _, _, gguf_types in VARIANTS:
        folder = os.path.join(root, name)
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        with open(os.path.join(folder, "tokens.txt")) as f:
            ids = [int(x) for x in f.read().split()]
        t = gguf_write.read_safetensors(os.path.join(folder, "model.safetensors"))
        want = np.fromfile(os.path.join(folder, "logits.f32"), dtype="<f4").reshape(len(ids), cfg["vocab_size"])
        got = FORWARD[cfg["model_type"]](cfg, t, ids).astype(np.float32)
        d = np.abs(got - want).max()
        ok &= d == 0
        print("%-14s %d tokens, vocab %d, recomputed |diff| %.1e" % (name, len(ids), cfg["vocab_size"], d))
    return ok

# ---------------------------------------------------------------------------------------------
# --torch-check: a second forward per architecture built from torch modules and tensor ops in the
# shape conventions of the transformers files ([batch, heads, seq, head_dim] via view/transpose,
# repeat_kv via expand, Conv1D via addmm, nn.LayerNorm, F.gelu(approximate="tanh"), ...),
# float64. Agreement with the NumPy references checks the reshape/layout reading twice.


def torch_forward(cfg, t, ids, dt=None):
    """dt: torch dtype of the whole computation (default float64; float32 estimates what a
    correct float32 forward can reach)."""
    import torch
    import torch.nn.functional as F
    torch.set_grad_enabled(False)
    dt = dt or torch.float64
    P = {k: torch.from_numpy(v.astype(np.float64)).to(dt) for k, v in t.items()}
    mt = cfg["model_type"]
    x_ids = torch.tensor([ids])
    T = len(ids)
    position_ids = torch.arange(T)[None, :]

    def linear(x, name, bias=True):
        return F.linear(x, P[name + ".weight"], P[name + ".bias"] if bias else None)

    def layernorm(x, name, eps):
        return F.layer_norm(x, (x.shape[-1],), P[name + ".weight"], P[name + ".bias"], eps)

    def rmsnorm(x, name, eps):
        var = x.pow(2).mean(-1, keepdim=True)
        return P[name + ".weight"] * (x * torch.rsqrt(var + eps))

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def hf_rope(q, k, dim, base):  # q, k [b, h, T, dim]
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dt) / dim))
        freqs = position_ids[0].to(dt)[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

    def partial(q, k, rot, base):
        qr, qp = q[..., :rot], q[..., rot:]
        kr, kp = k[..., :rot], k[..., rot:]
        qr, kr = hf_rope(qr, kr, rot, base)
        return torch.cat((qr, qp), -1), torch.cat((kr, kp), -1)

    def repeat_kv(h, n_rep):
        b, nkv, s, d = h.shape
        if n_rep == 1:
            return h
        return h[:, :, None, :, :].expand(b, nkv, n_rep, s, d).reshape(b, nkv * n_rep, s, d)

    def sdpa(q, k, v):  # [b, h, T, d]
        k = repeat_kv(k, q.shape[1] // k.shape[1])
        v = repeat_kv(v, q.shape[1] // v.shape[1])
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(q.shape[-1])
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        w = w.masked_fill(causal, float("-inf"))
        w = F.softmax(w, dim=-1)
        o = torch.matmul(w, v)  # [b, h, T, d]
        return o.transpose(1, 2).reshape(1, T, -1)

    def heads(x, n, d):  # [b, T, n*d] -> [b, n, T, d]
        return x.view(1, T, n, d).transpose(1, 2)

    if mt == "gpt2":
        p = "transformer." if "transformer.wte.weight" in t else ""
        C, H = cfg["n_embd"], cfg["n_head"]
        eps = cfg["layer_norm_epsilon"]

        def conv1d(x, name):
            return torch.addmm(P[name + ".bias"], x.view(-1, x.shape[-1]), P[name + ".weight"]).view(1, T, -1)
        h = F.embedding(x_ids, P[p + "wte.weight"]) + F.embedding(position_ids, P[p + "wpe.weight"])
        for i in range(cfg["n_layer"]):
            L = "%sh.%d." % (p, i)
            q, k, v = conv1d(layernorm(h, L + "ln_1", eps), L + "attn.c_attn").split(C, dim=2)
            h = h + conv1d(sdpa(heads(q, H, C // H), heads(k, H, C // H), heads(v, H, C // H)), L + "attn.c_proj")
            m = F.gelu(conv1d(layernorm(h, L + "ln_2", eps), L + "mlp.c_fc"), approximate="tanh")
            h = h + conv1d(m, L + "mlp.c_proj")
        h = layernorm(h, p + "ln_f", eps)
        return F.linear(h, P[p + "wte.weight"])[0].numpy()
    if mt == "gptj":
        C, H, R = cfg["n_embd"], cfg["n_head"], cfg["rotary_dim"]
        D = C // H
        eps = cfg["layer_norm_epsilon"]
        inv_freq = 1.0 / (10000 ** (torch.arange(0, R, 2, dtype=torch.int64).to(dt) / R))
        sinusoid = torch.einsum("i , j -> i j", torch.arange(T).to(dt), inv_freq)
        sin, cos = torch.sin(sinusoid), torch.cos(sinusoid)

        def every_two(x):
            x1, x2 = x[:, :, :, ::2], x[:, :, :, 1::2]
            return torch.stack((-x2, x1), dim=-1).flatten(-2)

        def apply(x):  # x [b, T, h, R]
            s = torch.repeat_interleave(sin[None, :, None, :], 2, 3)
            c = torch.repeat_interleave(cos[None, :, None, :], 2, 3)
            return (x * c) + (every_two(x) * s)
        h = F.embedding(x_ids, P["transformer.wte.weight"])
        for i in range(cfg["n_layer"]):
            L = "transformer.h.%d." % i
            a = layernorm(h, L + "ln_1", eps)
            q = linear(a, L + "attn.q_proj", False).view(1, T, H, D)
            k = linear(a, L + "attn.k_proj", False).view(1, T, H, D)
            v = linear(a, L + "attn.v_proj", False).view(1, T, H, D)
            q = torch.cat([apply(q[..., :R]), q[..., R:]], -1).permute(0, 2, 1, 3)
            k = torch.cat([apply(k[..., :R]), k[..., R:]], -1).permute(0, 2, 1, 3)
            attn = linear(sdpa(q, k, v.permute(0, 2, 1, 3)), L + "attn.out_proj", False)
            mlp = linear(F.gelu(linear(a, L + "mlp.fc_in"), approximate="tanh"), L + "mlp.fc_out")
            h = h + attn + mlp
        return linear(layernorm(h, "transformer.ln_f", eps), "lm_head")[0].numpy()
    if mt == "gpt_neox":
        C, H = cfg["hidden_size"], cfg["num_attention_heads"]
        D = C // H
        rot = int(D * cfg["rotary_pct"])
        eps = cfg["layer_norm_eps"]
        h = F.embedding(x_ids, P["gpt_neox.embed_in.weight"])
        for i in range(cfg["num_hidden_layers"]):
            L = "gpt_neox.layers.%d." % i
            qkv = linear(layernorm(h, L + "input_layernorm", eps), L + "attention.query_key_value")
            qkv = qkv.view(1, T, H, 3 * D).transpose(1, 2)
            q, k, v = qkv.chunk(3, dim=-1)
            q, k = partial(q, k, rot, cfg["rotary_emb_base"])
            attn = linear(sdpa(q, k, v), L + "attention.dense")
            mlp = linear(F.gelu(linear(layernorm(h, L + "post_attention_layernorm", eps),
                                       L + "mlp.dense_h_to_4h")), L + "mlp.dense_4h_to_h")
            h = h + attn + mlp
        h = layernorm(h, "gpt_neox.final_layer_norm", eps)
        return F.linear(h, P["embed_out.weight"])[0].numpy()
    # llama, phi, starcoder2: model.layers.N.self_attn.{q,k,v}_proj
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    D = C // H
    h = F.embedding(x_ids, P["model.embed_tokens.weight"])
    for i in range(cfg["num_hidden_layers"]):
        L = "model.layers.%d." % i
        if mt == "llama":
            a = rmsnorm(h, L + "input_layernorm", cfg["rms_norm_eps"])
            bias, rot, base = False, D, cfg["rope_theta"]
        elif mt == "phi":
            a = layernorm(h, L + "input_layernorm", cfg["layer_norm_eps"])
            bias, rot, base = True, int(D * cfg["partial_rotary_factor"]), cfg["rope_theta"]
        else:
            a = layernorm(h, L + "input_layernorm", cfg["norm_epsilon"])
            bias, rot, base = True, D, cfg["rope_theta"]
        q = heads(linear(a, L + "self_attn.q_proj", bias), H, D)
        k = heads(linear(a, L + "self_attn.k_proj", bias), Hkv, D)
        v = heads(linear(a, L + "self_attn.v_proj", bias), Hkv, D)
        q, k = partial(q, k, rot, base)
        o = sdpa(q, k, v)
        if mt == "phi":
            attn = linear(o, L + "self_attn.dense")
            mlp = linear(F.gelu(linear(a, L + "mlp.fc1"), approximate="tanh"), L + "mlp.fc2")
            h = h + attn + mlp
        elif mt == "llama":
            h = h + linear(o, L + "self_attn.o_proj", False)
            a = rmsnorm(h, L + "post_attention_layernorm", cfg["rms_norm_eps"])
            h = h + linear(F.silu(linear(a, L + "mlp.gate_proj", False)) * linear(a, L + "mlp.up_proj", False),
                           L + "mlp.down_proj", False)
        else:
            h = h + linear(o, L + "self_attn.o_proj")
            a = layernorm(h, L + "post_attention_layernorm", cfg["norm_epsilon"])
            h = h + linear(F.gelu(linear(a, L + "mlp.c_fc"), approximate="tanh"), L + "mlp.c_proj")
    if mt == "llama":
        h = rmsnorm(h, "model.norm", cfg["rms_norm_eps"])
        head = P["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else P["lm_head.weight"]
        return F.linear(h, head)[0].numpy()
    if mt == "phi":
        return linear(layernorm(h, "model.final_layernorm", cfg["layer_norm_eps"]), "lm_head")[0].numpy()
    h = layernorm(h, "model.norm", cfg["norm_epsilon"])
    return F.linear(h, P["model.embed_tokens.weight"])[0].numpy()


def torch_check(root):
    ok = True
    for name, _, _, _, _ in VARIANTS:
        folder = os.path.join(root, name)
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        with open(os.path.join(folder, "tokens.txt")) as f:
            ids = [int(x) for x in f.read().split()]
        t = gguf_write.read_safetensors(os.path.join(folder, "model.safetensors"))
        a = FORWARD[cfg["model_type"]](cfg, t, ids)
        b = torch_forward(cfg, t, ids)
        d = np.abs(a - b).max()
        ok &= d < 1e-9
        import torch
        d32 = np.abs(a - torch_forward(cfg, t, ids, torch.float32)).max()
        print("%-14s numpy vs torch float64 |diff| %.1e   (torch float32: %.1e)" % (name, d, d32))
    return ok


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    if len(argv) > 1 and argv[1] == "--torch-check":
        root = argv[2] if len(argv) > 2 else os.path.join(here, "..", "data", "models")
        return 0 if torch_check(root) else 1
    if len(argv) > 1 and argv[1] == "--check":
        root = argv[2] if len(argv) > 2 else os.path.join(here, "..", "data", "models")
        return 0 if check(root) else 1
    root = argv[1] if len(argv) > 1 else os.path.join(here, "..", "data", "models")
    only = argv[2:]
    for v in VARIANTS:
        if not only or v[0] in only:
            make_variant(root, *v)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
