#!/usr/bin/python3
"""ref_gpt_neox.py - an independent float64 NumPy reference forward of Hugging Face
GPTNeoXForCausalLM, read straight from a checkpoint folder in Hugging Face layout.

Written from the architecture's definition (transformers' modeling_gpt_neox.py, as summarised in
REFERENCE.md C.1/C.2), not from tfm.h, so that it can judge tfm.h and tools/tfm-convert.c:

    x = embed_in[ids]
    per layer:  a = attn(ln1(x))
                parallel residual:   x = x + a + mlp(ln2(x))
                sequential residual: x = x + a; x = x + mlp(ln2(x))
    logits = embed_out(final_layer_norm(x))        (embed_out is embed_in when tied)

    attn: qkv = W_qkv x + b_qkv viewed as [n_heads, 3*d_head] (per head: q rows, k rows, v rows);
          RoPE on the first rotary_ndims = int(d_head * rotary_pct) dims of q and k, NeoX
          half-split pairing (rotate_half), inv_freq[j] = base^(-2j/rotary_ndims); causal softmax
          of q.k / sqrt(d_head); heads concatenated; dense.
    mlp:  dense_4h_to_h(act(dense_h_to_4h(x))), act "gelu" = exact erf, "gelu_new" = tanh form.

Every weight is read as stored (f32, f16 or bf16 safetensors, one file or shards) and widened to
float64 exactly, so the reference is computed on the very numbers a converter sees.

Usage: /usr/bin/python3 tests/gen/ref_gpt_neox.py DIR [ids...]   prints the logits of the last
position (ids default to DIR/tokens.txt).
       /usr/bin/python3 tests/gen/ref_gpt_neox.py --torch-check DIR...   compares with a second,
torch-written forward (float64) on each folder's tokens.txt.
       /usr/bin/python3 tests/gen/ref_gpt_neox.py --diagnose DIR GOT.f32   ranks the reference and
variants with one typical mistake each (qkv as thirds, interleaved RoPE, wrong rotary dims or
base, GELU form, residual form, dropped biases, tied head) by distance to logits GOT.f32
(float32 [n_tokens, vocab], as test_models writes build/models/NAME.got.f32 on a failure). As a module: load(dir) and forward(model, ids).
Needs only NumPy (math.erf for the exact GELU); --torch-check also needs torch.
"""
import json
import math
import os
import struct
import sys

import numpy as np

# ---------------------------------------------------------------------------------------------
# safetensors reading (format: u64 LE header length N, N bytes of JSON, then the data buffer;
# data_offsets are relative to the start of the buffer, end exclusive).


def _decode(dtype, raw, shape):
    if dtype == "F32":
        a = np.frombuffer(raw, dtype="<f4").astype(np.float64)
    elif dtype == "F16":
        a = np.frombuffer(raw, dtype="<f2").astype(np.float64)
    elif dtype == "BF16":  # bf16 is the top half of an f32
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        a = u.view(np.float32).astype(np.float64)
    elif dtype == "F64":
        a = np.frombuffer(raw, dtype="<f8").astype(np.float64)
    elif dtype == "BOOL":
        a = np.frombuffer(raw, dtype=np.uint8).astype(bool)
    else:
        raise ValueError("unsupported safetensors dtype " + dtype)
    return a.reshape(shape)


def read_safetensors(path):
    """{name: ndarray} of one .safetensors file (floats widened to float64)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = _decode(info["dtype"], blob[base + begin:base + end], info["shape"])
    return out


def read_checkpoint(folder):
    """All tensors of model.safetensors or of the shards named in model.safetensors.index.json."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        tensors = {}
        for shard in sorted(set(weight_map.values())):
            tensors.update(read_safetensors(os.path.join(folder, shard)))
        missing = set(weight_map) - set(tensors)
        if missing:
            raise ValueError("index names tensors missing from the shards: %s" % sorted(missing))
        return tensors
    return read_safetensors(os.path.join(folder, "model.safetensors"))


# ---------------------------------------------------------------------------------------------
# config.json -> hyperparameters, with the key precedence of transformers' GPTNeoXConfig:
# rope_parameters.* first, then the legacy top-level keys, then the documented defaults.


def read_config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type") != "gpt_neox":
        raise ValueError("not a gpt_neox config")
    rp = c.get("rope_parameters") or {}
    if rp.get("rope_type", "default") != "default":
        raise ValueError("rope scaling is not implemented by this reference")
    d_model = c["hidden_size"]
    n_heads = c["num_attention_heads"]
    d_head = d_model // n_heads
    pct = rp.get("partial_rotary_factor", c.get("rotary_pct", 0.25))
    base = rp.get("rope_theta", c.get("rotary_emb_base", 10000.0))
    return {
        "n_vocab": c["vocab_size"],
        "d_model": d_model,
        "n_heads": n_heads,
        "d_head": d_head,
        "n_layers": c["num_hidden_layers"],
        "d_ff": c["intermediate_size"],
        "rotary_ndims": int(d_head * pct),
        "rope_base": float(base),
        "eps": float(c.get("layer_norm_eps", 1e-5)),
        "act": c.get("hidden_act", "gelu"),
        "parallel": bool(c.get("use_parallel_residual", True)),
        "tied": bool(c.get("tie_word_embeddings", False)),
        "n_ctx": c.get("max_position_embeddings", 2048),
    }


def load(folder):
    cfg = read_config(folder)
    return {"cfg": cfg, "w": read_checkpoint(folder)}


# ---------------------------------------------------------------------------------------------
# The forward pass, float64 throughout. x is [T, d_model]; every W is [d_out, d_in], y = x W^T + b.


def layer_norm(x, w, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # biased variance, as torch
    return (x - mean) / np.sqrt(var + eps) * w + b


def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def activation(name, x):
    if name == "gelu":  # exact: 0.5 x (1 + erf(x / sqrt 2))
        return 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh"):  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError("unsupported hidden_act " + name)


def rope_tables(cfg, n_pos):
    """cos, sin [n_pos, rotary_ndims]: emb = cat(freqs, freqs) as in transformers."""
    r = cfg["rotary_ndims"]
    inv_freq = 1.0 / cfg["rope_base"] ** (np.arange(0, r, 2, dtype=np.float64) / r)
    freqs = np.outer(np.arange(n_pos, dtype=np.float64), inv_freq)  # [n_pos, r/2]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb), np.sin(emb)


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def apply_rope(x, cos, sin, r, interleaved=False):
    """x [n_heads, T, d_head]: rotate the first r dims of every head, pass the rest through.
    interleaved (GPT-J pairs (2j, 2j+1)) is wrong for GPT-NeoX; it exists for --diagnose."""
    rot, keep = x[..., :r], x[..., r:]
    if interleaved:
        c, s = cos[None, :, :r // 2], sin[None, :, :r // 2]
        even, odd = rot[..., 0::2], rot[..., 1::2]
        rot = np.stack([even * c - odd * s, even * s + odd * c], axis=-1).reshape(rot.shape)
    else:
        rot = rot * cos[None] + rotate_half(rot) * sin[None]
    return np.concatenate([rot, keep], axis=-1)


def attention(cfg, w, p, x, cos, sin):
    T = x.shape[0]
    H, D, r = cfg["n_heads"], cfg["d_head"], cfg["rotary_ndims"]
    qkv = linear(x, w[p + "attention.query_key_value.weight"], w[p + "attention.query_key_value.bias"])
    qkv = qkv.reshape(T, H, 3 * D).transpose(1, 0, 2)  # [H, T, 3D]: per head q | k | v
    q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]
    q = apply_rope(q, cos, sin, r, cfg.get("rope_interleaved", False))
    k = apply_rope(k, cos, sin, r, cfg.get("rope_interleaved", False))
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(D)  # [H, T, T]
    causal = np.triu(np.ones((T, T), dtype=bool), k=1)
    scores = np.where(causal[None], -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    out = (probs @ v).transpose(1, 0, 2).reshape(T, H * D)  # heads concatenated
    return linear(out, w[p + "attention.dense.weight"], w[p + "attention.dense.bias"])


def mlp(cfg, w, p, x):
    h = linear(x, w[p + "mlp.dense_h_to_4h.weight"], w[p + "mlp.dense_h_to_4h.bias"])
    return linear(activation(cfg["act"], h), w[p + "mlp.dense_4h_to_h.weight"], w[p + "mlp.dense_4h_to_h.bias"])


def forward(model, ids):
    """logits [len(ids), n_vocab] (float64) for the tokens at positions 0..len(ids)-1."""
    cfg, w = model["cfg"], model["w"]
    eps = cfg["eps"]
    ids = np.asarray(ids, dtype=np.int64)
    if ids.min() < 0 or ids.max() >= cfg["n_vocab"] or len(ids) > cfg["n_ctx"]:
        raise ValueError("token id or sequence length out of range")
    cos, sin = rope_tables(cfg, len(ids))
    x = w["gpt_neox.embed_in.weight"][ids]
    for i in range(cfg["n_layers"]):
        p = "gpt_neox.layers.%d." % i
        ln1 = layer_norm(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
        a = attention(cfg, w, p, ln1, cos, sin)
        if cfg["parallel"]:
            ln2 = layer_norm(x, w[p + "post_attention_layernorm.weight"], w[p + "post_attention_layernorm.bias"], eps)
            x = x + a + mlp(cfg, w, p, ln2)
        else:
            x = x + a
            ln2 = layer_norm(x, w[p + "post_attention_layernorm.weight"], w[p + "post_attention_layernorm.bias"], eps)
            x = x + mlp(cfg, w, p, ln2)
    x = layer_norm(x, w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"], eps)
    head = w["gpt_neox.embed_in.weight"] if cfg["tied"] else w["embed_out.weight"]
    return linear(x, head)


def forward_torch(model, ids):
    """A second, differently written forward with torch (float64) modules in the shape of
    transformers' code (nn.Linear / nn.LayerNorm / F.gelu / masked_fill + softmax), used by
    --torch-check to catch mistakes in the NumPy primitives above."""
    import torch
    import torch.nn.functional as F

    cfg, w = model["cfg"], model["w"]
    t = {k: torch.from_numpy(np.asarray(a, dtype=np.float64)) for k, a in w.items() if a.dtype != bool}
    H, D, r, eps = cfg["n_heads"], cfg["d_head"], cfg["rotary_ndims"], cfg["eps"]
    T = len(ids)
    ids_t = torch.tensor(ids, dtype=torch.long)
    inv_freq = 1.0 / (cfg["rope_base"] ** (torch.arange(0, r, 2, dtype=torch.float64) / r))
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()

    def rot_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def ln(x, name):
        return F.layer_norm(x, (x.shape[-1],), t[name + ".weight"], t[name + ".bias"], eps)

    def act(x):
        return F.gelu(x) if cfg["act"] == "gelu" else F.gelu(x, approximate="tanh")

    h = F.embedding(ids_t, t["gpt_neox.embed_in.weight"])[None]  # [1, T, d_model]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(cfg["n_layers"]):
        p = "gpt_neox.layers.%d." % i
        x = ln(h, p + "input_layernorm")
        qkv = F.linear(x, t[p + "attention.query_key_value.weight"], t[p + "attention.query_key_value.bias"])
        qkv = qkv.view(1, T, H, 3 * D).permute(0, 2, 1, 3)
        q, k, v = qkv.chunk(3, dim=-1)
        q = torch.cat((q[..., :r] * cos + rot_half(q[..., :r]) * sin, q[..., r:]), dim=-1)
        k = torch.cat((k[..., :r] * cos + rot_half(k[..., :r]) * sin, k[..., r:]), dim=-1)
        att = torch.matmul(q, k.transpose(-1, -2)) * D ** -0.5
        att = att.masked_fill(~mask, torch.finfo(att.dtype).min).softmax(dim=-1)
        a = torch.matmul(att, v).transpose(1, 2).reshape(1, T, H * D)
        a = F.linear(a, t[p + "attention.dense.weight"], t[p + "attention.dense.bias"])

        def ffn(y):
            y = F.linear(y, t[p + "mlp.dense_h_to_4h.weight"], t[p + "mlp.dense_h_to_4h.bias"])
            return F.linear(act(y), t[p + "mlp.dense_4h_to_h.weight"], t[p + "mlp.dense_4h_to_h.bias"])

        if cfg["parallel"]:
            h = ffn(ln(h, p + "post_attention_layernorm")) + a + h
        else:
            a = a + h
            h = ffn(ln(a, p + "post_attention_layernorm")) + a
    h = ln(h, "gpt_neox.final_layer_norm")
    head = t["gpt_neox.embed_in.weight"] if cfg["tied"] else t["embed_out.weight"]
    return F.linear(h, head)[0].numpy()


def mutants(model):
    """(label, model) pairs: the reference itself, and the reference with one plausible mistake of
    a converter or a forward pass each. --diagnose ranks them by distance to tfm.h's logits."""
    cfg, w = model["cfg"], model["w"]
    H, D = cfg["n_heads"], cfg["d_head"]

    def with_cfg(**kw):
        c = dict(cfg)
        c.update(kw)
        return {"cfg": c, "w": w}

    def with_w(fn):
        return {"cfg": cfg, "w": {k: fn(k, a) for k, a in w.items()}}

    def thirds(k, a):  # what reading the fused qkv as contiguous q|k|v thirds amounts to
        if "query_key_value" not in k:
            return a
        return a.reshape((3, H, D) + a.shape[1:]).transpose((1, 0, 2) + tuple(range(3, a.ndim + 2))).reshape(a.shape)

    out = [("reference (as stored)", model),
           ("matrices rounded to f16", with_w(lambda k, a: a.astype(np.float16).astype(np.float64) if a.ndim == 2 else a)),
           ("qkv read as q|k|v thirds", with_w(thirds)),
           ("RoPE interleaved pairs", with_cfg(rope_interleaved=True)),
           ("no RoPE", with_cfg(rotary_ndims=0)),
           ("RoPE on all d_head dims", with_cfg(rotary_ndims=D)),
           ("rotary_pct default 0.25", with_cfg(rotary_ndims=int(D * 0.25))),
           ("RoPE base 10000", with_cfg(rope_base=10000.0)),
           ("layer_norm_eps 1e-5", with_cfg(eps=1e-5)),
           ("other GELU form", with_cfg(act="gelu_new" if cfg["act"] == "gelu" else "gelu")),
           ("other residual form", with_cfg(parallel=not cfg["parallel"])),
           ("qkv bias dropped", with_w(lambda k, a: 0 * a if k.endswith("query_key_value.bias") else a)),
           ("MLP biases dropped", with_w(lambda k, a: 0 * a if ".mlp." in k and k.endswith("bias") else a))]
    if "embed_out.weight" in w:
        out.append(("head tied to embed_in", with_cfg(tied=True)))
    return out


def diagnose(folder, got_path):
    model = load(folder)
    ids = read_tokens(folder)
    got = np.fromfile(got_path, dtype="<f4").astype(np.float64)
    got = got.reshape(len(ids), -1)
    rows = []
    for label, m in mutants(model):
        ref = forward(m, ids)
        d = np.abs(ref - got)
        first_bad = int(np.argmax(d.max(axis=1) > 1e-3)) if (d > 1e-3).any() else -1
        rows.append((d.max(), label, first_bad))
    for d, label, first_bad in sorted(rows):
        print("  maxdiff %10.3g  %-28s first position off by >1e-3: %s" % (d, label, first_bad if first_bad >= 0 else "-"))
    return 0


def read_tokens(folder):
    with open(os.path.join(folder, "tokens.txt")) as f:
        return [int(t) for t in f.read().split()]


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    if argv[1] == "--diagnose":
        return diagnose(argv[2], argv[3])
    if argv[1] == "--torch-check":
        worst = 0.0
        for folder in argv[2:]:
            model = load(folder)
            ids = read_tokens(folder)
            d = float(np.abs(forward(model, ids) - forward_torch(model, ids)).max())
            print("%s: numpy vs torch float64 maxdiff %.3g" % (folder, d))
            worst = max(worst, d)
        return 0 if worst < 1e-9 else 1
    model = load(argv[1])
    ids = [int(t) for t in argv[2:]] or read_tokens(argv[1])
    logits = forward(model, ids)
    np.set_printoptions(precision=6, suppress=True, linewidth=120)
    print("config:", model["cfg"])
    print("last-position logits:", logits[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
