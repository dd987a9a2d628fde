#!/usr/bin/python3
"""check_gguf.py - reader-side cross-check of the model GGUF files in tests/data/models.

    /usr/bin/python3 tests/gen/check_gguf.py [--extra] [ROOT]      (default tests/data/models)

Written independently of tests/gen/gguf_write.py (own parser, own dequantizer, own forwards):

1. Parse every */model*.gguf: magic, version 3, KV section (all value types), tensor infos.
   Assert: general.alignment == 32 and every tensor data offset a multiple of it; the data
   section starts at the first aligned offset after the infos; tensors are in order, do not
   overlap, and each occupies exactly its type's byte size (F32 4n, F16 2n, Q8_0 34n/32) plus
   zero padding; the file ends at the padded end of the last tensor; padding bytes are zero.
2. Dims: each GGUF tensor's dims are the reverse of the numpy shape of the Hugging Face
   tensor it came from (after the documented transform: gpt2 Conv1D transposed, so GGUF dims
   of a Conv1D weight equal its safetensors shape; everything else reversed).
3. Values: F32 tensors are byte-identical to the transformed safetensors tensor; F16 equal
   to its float16 rounding; Q8_0 blocks decode to within d/2 + 127*|fp16(d) - d| of it, with
   d = max|x|/127 per 32-block.
4. Logits: a forward written the llama.cpp way on the GGUF tensors as stored (llama: Meta
   interleaved-pair RoPE on the permuted Q/K; gptneox: q|k|v thirds; gpt2: Linear-layout
   weights and the explicit output.weight) must reproduce logits.f32 (F32 files),
   logits_f16.f32 (F16) or logits_q8.f32 (Q8_0) to float32 rounding.
With --extra, also converts tests/data/models/phi and starcoder2 to F32 GGUF (phi2 / starcoder2) in a
temporary folder with tests/gen/gguf_write.py and checks those the same way.
Exit status 0 when everything holds.
"""
import glob
import json
import math
import os
import struct
import sys

import numpy as np

TYPE_SIZE = {0: (1, 4), 1: (1, 2), 8: (32, 34)}   # ggml type -> (block elements, block bytes)
TYPE_NAME = {0: "F32", 1: "F16", 8: "Q8_0"}


class Reader:
    def __init__(self, blob):
        self.b, self.o = blob, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.o)
        self.o += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("<Q")
        s = self.b[self.o:self.o + n]
        assert len(s) == n
        self.o += n
        return s.decode("utf-8")

    def value(self, t):
        scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B",
                  10: "<Q", 11: "<q", 12: "<d"}
        if t in scalar:
            v = self.take(scalar[t])
            if t == 7:
                assert v in (0, 1)
                return bool(v)
            return v
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        raise AssertionError("bad value type %d" % t)


def parse(path):
    blob = open(path, "rb").read()
    r = Reader(blob)
    assert r.take("<4s") == b"GGUF"
    assert r.take("<I") == 3
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        assert key not in kv and key.isascii()
        kv[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        assert len(name) < 64
        nd = r.take("<I")
        assert 1 <= nd <= 4
        dims = [r.take("<Q") for _ in range(nd)]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    align = kv.get("general.alignment", 32)
    assert align == 32, align
    data_start = (r.o + align - 1) // align * align
    assert all(x == 0 for x in blob[r.o:data_start]), "nonzero padding after tensor infos"
    tensors = {}
    expect = 0
    for name, dims, gtype, off in infos:
        assert name not in tensors
        assert off % align == 0 and off == expect, (name, off, expect)
        n = int(np.prod(dims))
        be, bb = TYPE_SIZE[gtype]
        assert dims[0] % be == 0
        size = n // be * bb
        raw = blob[data_start + off:data_start + off + size]
        assert len(raw) == size
        end = off + size
        padded = (end + align - 1) // align * align
        assert all(x == 0 for x in blob[data_start + end:data_start + padded]), name
        expect = padded
        shape = tuple(reversed(dims))  # numpy order
        if gtype == 0:
            a = np.frombuffer(raw, "<f4").reshape(shape)
        elif gtype == 1:
            a = np.frombuffer(raw, "<f2").astype(np.float32).reshape(shape)
        else:
            blk = np.frombuffer(raw, np.uint8).reshape(-1, 34)
            d = blk[:, :2].copy().view("<f2").astype(np.float32)
            q = blk[:, 2:].copy().view(np.int8).astype(np.float32)
            a = (d * q).reshape(shape)
        tensors[name] = (a, gtype, dims)
    assert data_start + expect == len(blob), (data_start + expect, len(blob))
    return kv, tensors


def read_safetensors(path):
    blob = open(path, "rb").read()
    n = struct.unpack_from("<Q", blob)[0]
    h = json.loads(blob[8:8 + n])
    out = {}
    for k, e in h.items():
        if k != "__metadata__":
            b, end = e["data_offsets"]
            out[k] = np.frombuffer(blob[8 + n + b:8 + n + end], "<f4").reshape(e["shape"])
    return out


# --- expected GGUF tensors from the HF checkpoint (written from REFERENCE.md D.1 / C.2) --------


def expected(cfg, t):
    mt = cfg["model_type"]
    e = {}
    if mt == "gpt2":
        p = "transformer." if "transformer.wte.weight" in t else ""
        e["token_embd.weight"] = t[p + "wte.weight"]
        e["output.weight"] = t[p + "wte.weight"]
        e["position_embd.weight"] = t[p + "wpe.weight"]
        e["output_norm.weight"], e["output_norm.bias"] = t[p + "ln_f.weight"], t[p + "ln_f.bias"]
        for i in range(cfg["n_layer"]):
            h = "%sh.%d." % (p, i)
            for hf, gg in (("ln_1", "attn_norm"), ("ln_2", "ffn_norm")):
                e["blk.%d.%s.weight" % (i, gg)] = t[h + hf + ".weight"]
                e["blk.%d.%s.bias" % (i, gg)] = t[h + hf + ".bias"]
            for hf, gg in (("attn.c_attn", "attn_qkv"), ("attn.c_proj", "attn_output"),
                           ("mlp.c_fc", "ffn_up"), ("mlp.c_proj", "ffn_down")):
                e["blk.%d.%s.weight" % (i, gg)] = t[h + hf + ".weight"].T   # Conv1D [in,out] -> [out,in]
                e["blk.%d.%s.bias" % (i, gg)] = t[h + hf + ".bias"]
    elif mt == "llama":
        H, Hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        D = cfg["hidden_size"] // H

        def to_meta(w, nh):
            # Meta row 2j of a head = HF row j, Meta row 2j+1 = HF row D/2 + j
            out = np.empty_like(w)
            for hh in range(nh):
                for j in range(D // 2):
                    out[hh * D + 2 * j] = w[hh * D + j]
                    out[hh * D + 2 * j + 1] = w[hh * D + D // 2 + j]
            return out
        e["token_embd.weight"] = t["model.embed_tokens.weight"]
        e["output_norm.weight"] = t["model.norm.weight"]
        if not cfg["tie_word_embeddings"]:
            e["output.weight"] = t["lm_head.weight"]
        for i in range(cfg["num_hidden_layers"]):
            L, B = "model.layers.%d." % i, "blk.%d." % i
            e[B + "attn_norm.weight"] = t[L + "input_layernorm.weight"]
            e[B + "attn_q.weight"] = to_meta(t[L + "self_attn.q_proj.weight"], H)
            e[B + "attn_k.weight"] = to_meta(t[L + "self_attn.k_proj.weight"], Hkv)
            for hf, gg in (("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                           ("post_attention_layernorm", "ffn_norm"), ("mlp.gate_proj", "ffn_gate"),
                           ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")):
                e[B + gg + ".weight"] = t[L + hf + ".weight"]
    elif mt == "gpt_neox":
        H = cfg["num_attention_heads"]
        D = cfg["hidden_size"] // H
        e["token_embd.weight"] = t["gpt_neox.embed_in.weight"]
        e["output.weight"] = t["embed_out.weight"]
        e["output_norm.weight"] = t["gpt_neox.final_layer_norm.weight"]
        e["output_norm.bias"] = t["gpt_neox.final_layer_norm.bias"]
        for i in range(cfg["num_hidden_layers"]):
            L, B = "gpt_neox.layers.%d." % i, "blk.%d." % i
            for hf, gg in (("input_layernorm", "attn_norm"), ("post_attention_layernorm", "ffn_norm"),
                           ("attention.dense", "attn_output"), ("mlp.dense_h_to_4h", "ffn_up"),
                           ("mlp.dense_4h_to_h", "ffn_down")):
                e[B + gg + ".weight"] = t[L + hf + ".weight"]
                e[B + gg + ".bias"] = t[L + hf + ".bias"]
            for s in ("weight", "bias"):
                w = t[L + "attention.query_key_value." + s]
                # HF row h*3D + j*D + r  ->  GGUF row j*H*D + h*D + r  (j = 0 q, 1 k, 2 v)
                rows = [w[h * 3 * D + j * D: h * 3 * D + (j + 1) * D] for j in range(3) for h in range(H)]
                e[B + "attn_qkv." + s] = np.concatenate(rows, 0)
    elif mt in ("phi", "starcoder2"):   # no layout changes, names only
        e["token_embd.weight"] = t["model.embed_tokens.weight"]
        sub = [("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"),
               ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v")]
        if mt == "phi":
            sub += [("self_attn.dense", "attn_output"), ("mlp.fc1", "ffn_up"), ("mlp.fc2", "ffn_down")]
            top = [("model.final_layernorm", "output_norm"), ("lm_head", "output")]
        else:
            sub += [("self_attn.o_proj", "attn_output"), ("post_attention_layernorm", "ffn_norm"),
                    ("mlp.c_fc", "ffn_up"), ("mlp.c_proj", "ffn_down")]
            top = [("model.norm", "output_norm")]
        for i in range(cfg["num_hidden_layers"]):
            for hf, gg in sub:
                for s in ("weight", "bias"):
                    e["blk.%d.%s.%s" % (i, gg, s)] = t["model.layers.%d.%s.%s" % (i, hf, s)]
        for hf, gg in top:
            for s in ("weight", "bias"):
                e[gg + "." + s] = t[hf + "." + s]
    return e


# --- llama.cpp-style forwards on GGUF tensors (float64) ------------------------------------------


def ln(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * w + b


def attend(q, k, v):
    T, H, D = q.shape
    g = H // k.shape[1]
    out = np.empty((T, H, D))
    for h in range(H):
        s = q[:, h] @ k[:, h // g].T / math.sqrt(D)
        s[np.triu_indices(T, 1)] = -np.inf
        s = np.exp(s - s.max(1, keepdims=True))
        out[:, h] = (s / s.sum(1, keepdims=True)) @ v[:, h // g]
    return out.reshape(T, H * D)


def rope_norm(x, n_rot, base):
    """ggml 'normal' RoPE: pairs (2j, 2j+1) of the first n_rot dims; theta_j = base^(-2j/n_rot)."""
    x = x.copy()
    for p in range(x.shape[0]):
        for j in range(n_rot // 2):
            a = p * base ** (-2.0 * j / n_rot)
            c, s = math.cos(a), math.sin(a)
            x0, x1 = x[p, :, 2 * j].copy(), x[p, :, 2 * j + 1].copy()
            x[p, :, 2 * j], x[p, :, 2 * j + 1] = x0 * c - x1 * s, x0 * s + x1 * c
    return x


def rope_neox(x, n_rot, base):
    """ggml NeoX RoPE: pairs (j, j + n_rot/2) of the first n_rot dims."""
    x = x.copy()
    half = n_rot // 2
    for p in range(x.shape[0]):
        for j in range(half):
            a = p * base ** (-2.0 * j / n_rot)
            c, s = math.cos(a), math.sin(a)
            x0, x1 = x[p, :, j].copy(), x[p, :, j + half].copy()
            x[p, :, j], x[p, :, j + half] = x0 * c - x1 * s, x0 * s + x1 * c
    return x


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def forward(kv, T_, ids):
    arch = kv["general.architecture"]

    def g(n):
        return T_[n][0].astype(np.float64)
    T = len(ids)
    nl = kv[arch + ".block_count"]
    H = kv[arch + ".attention.head_count"]
    x = g("token_embd.weight")[ids]
    C = x.shape[1]
    D = C // H
    if arch == "gpt2":
        eps = kv["gpt2.attention.layer_norm_epsilon"]
        x = x + g("position_embd.weight")[:T]
        for i in range(nl):
            B = "blk.%d." % i
            a = ln(x, g(B + "attn_norm.weight"), g(B + "attn_norm.bias"), eps)
            qkv = a @ g(B + "attn_qkv.weight").T + g(B + "attn_qkv.bias")
            q, k, v = (qkv[:, j * C:(j + 1) * C].reshape(T, H, D) for j in range(3))
            x = x + attend(q, k, v) @ g(B + "attn_output.weight").T + g(B + "attn_output.bias")
            m = ln(x, g(B + "ffn_norm.weight"), g(B + "ffn_norm.bias"), eps)
            m = gelu_tanh(m @ g(B + "ffn_up.weight").T + g(B + "ffn_up.bias"))
            x = x + m @ g(B + "ffn_down.weight").T + g(B + "ffn_down.bias")
        x = ln(x, g("output_norm.weight"), g("output_norm.bias"), eps)
        return x @ g("output.weight").T
    if arch == "llama":
        eps = kv["llama.attention.layer_norm_rms_epsilon"]
        Hkv = kv["llama.attention.head_count_kv"]
        n_rot, base = kv["llama.rope.dimension_count"], kv["llama.rope.freq_base"]

        def rms(y, w):
            return y / np.sqrt((y * y).mean(-1, keepdims=True) + eps) * w
        for i in range(nl):
            B = "blk.%d." % i
            a = rms(x, g(B + "attn_norm.weight"))
            q = rope_norm((a @ g(B + "attn_q.weight").T).reshape(T, H, D), n_rot, base)
            k = rope_norm((a @ g(B + "attn_k.weight").T).reshape(T, Hkv, D), n_rot, base)
            v = (a @ g(B + "attn_v.weight").T).reshape(T, Hkv, D)
            x = x + attend(q, k, v) @ g(B + "attn_output.weight").T
            a = rms(x, g(B + "ffn_norm.weight"))
            gate = a @ g(B + "ffn_gate.weight").T
            x = x + (gate / (1 + np.exp(-gate)) * (a @ g(B + "ffn_up.weight").T)) @ g(B + "ffn_down.weight").T
        x = rms(x, g("output_norm.weight"))
        head = g("output.weight") if "output.weight" in T_ else g("token_embd.weight")
        return x @ head.T
    if arch == "gptneox":
        eps = kv["gptneox.attention.layer_norm_epsilon"]
        n_rot = kv["gptneox.rope.dimension_count"]
        base = kv.get("gptneox.rope.freq_base", 10000.0)
        assert kv["gptneox.use_parallel_residual"]
        for i in range(nl):
            B = "blk.%d." % i
            a = ln(x, g(B + "attn_norm.weight"), g(B + "attn_norm.bias"), eps)
            qkv = a @ g(B + "attn_qkv.weight").T + g(B + "attn_qkv.bias")
            q, k, v = (qkv[:, j * C:(j + 1) * C].reshape(T, H, D) for j in range(3))
            att = attend(rope_neox(q, n_rot, base), rope_neox(k, n_rot, base), v)
            att = att @ g(B + "attn_output.weight").T + g(B + "attn_output.bias")
            m = ln(x, g(B + "ffn_norm.weight"), g(B + "ffn_norm.bias"), eps)
            m = m @ g(B + "ffn_up.weight").T + g(B + "ffn_up.bias")
            m = 0.5 * m * (1 + np.vectorize(math.erf)(m / math.sqrt(2)))
            x = x + att + m @ g(B + "ffn_down.weight").T + g(B + "ffn_down.bias")
        x = ln(x, g("output_norm.weight"), g("output_norm.bias"), eps)
        return x @ g("output.weight").T
    if arch in ("phi2", "starcoder2"):
        eps = kv[arch + ".attention.layer_norm_epsilon"]
        Hkv = kv[arch + ".attention.head_count_kv"]
        n_rot = kv.get(arch + ".rope.dimension_count", D)
        base = kv.get(arch + ".rope.freq_base", 10000.0)
        for i in range(nl):
            B = "blk.%d." % i

            def lin(n, y):
                return y @ g(B + n + ".weight").T + g(B + n + ".bias")
            a = ln(x, g(B + "attn_norm.weight"), g(B + "attn_norm.bias"), eps)
            q = rope_neox(lin("attn_q", a).reshape(T, H, D), n_rot, base)
            k = rope_neox(lin("attn_k", a).reshape(T, Hkv, D), n_rot, base)
            att = lin("attn_output", attend(q, k, lin("attn_v", a).reshape(T, Hkv, D)))
            if arch == "phi2":   # parallel, one norm
                x = x + att + lin("ffn_down", gelu_tanh(lin("ffn_up", a)))
            else:
                x = x + att
                m = ln(x, g(B + "ffn_norm.weight"), g(B + "ffn_norm.bias"), eps)
                x = x + lin("ffn_down", gelu_tanh(lin("ffn_up", m)))
        x = ln(x, g("output_norm.weight"), g("output_norm.bias"), eps)
        if "output.weight" in T_:
            return x @ g("output.weight").T + (g("output.bias") if "output.bias" in T_ else 0)
        return x @ g("token_embd.weight").T
    raise AssertionError(arch)


def check_file(path, folder=None):
    folder = folder or os.path.dirname(path)
    cfg = json.load(open(os.path.join(folder, "config.json")))
    st = read_safetensors(os.path.join(folder, "model.safetensors"))
    kv, T_ = parse(path)
    arch = {"gpt2": "gpt2", "llama": "llama", "gpt_neox": "gptneox", "phi": "phi2",
            "starcoder2": "starcoder2"}[cfg["model_type"]]
    assert kv["general.architecture"] == arch
    exp = expected(cfg, st)
    assert set(exp) == set(T_), sorted(set(exp) ^ set(T_))
    types = set()
    for name, want in exp.items():
        a, gtype, dims = T_[name]
        assert list(dims) == list(reversed(want.shape)), (name, dims, want.shape)
        types.add(TYPE_NAME[gtype])
        if gtype == 0:
            assert np.array_equal(a, want), name
        elif gtype == 1:
            assert np.array_equal(a, want.astype(np.float16).astype(np.float32)), name
        else:
            blocks = want.reshape(-1, 32)
            d = np.abs(blocks).max(1, keepdims=True) / 127
            d16 = d.astype(np.float16).astype(np.float32)
            err = np.abs(a.reshape(-1, 32) - blocks)
            # rounding (d/2) plus the fp16 rounding of d times |q| <= 127
            assert np.all(err <= d * 0.5 + 127 * np.abs(d16 - d) + 1e-6 * np.abs(blocks)), name
        # the converter's always-F32 set
        if want.ndim == 1 or name.endswith("_norm.weight") or name == "position_embd.weight":
            assert gtype == 0, name
    ftype = kv["general.file_type"]
    lname = {0: "logits.f32", 1: "logits_f16.f32", 7: "logits_q8.f32"}[ftype]
    ids = [int(s) for s in open(os.path.join(folder, "tokens.txt")).read().split()]
    want = np.fromfile(os.path.join(folder, lname), "<f4").reshape(len(ids), -1)
    got = forward(kv, T_, ids)
    diff = np.abs(got.astype(np.float32) - want).max()
    tol = 1e-5 * max(1.0, np.abs(want).max())
    assert diff <= tol, (path, diff)
    nbytes = os.path.getsize(path)
    return "%-34s %-10s %2d tensors %-13s %7d bytes  logits vs %-15s |diff| %.1e" % (
        os.path.relpath(path, os.path.dirname(folder)) if path.startswith(folder) else path, arch, len(T_), "/".join(sorted(types)),
        nbytes, lname, diff)


def main(argv):
    extra = "--extra" in argv
    argv = [a for a in argv if a != "--extra"]
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                       "data", "models")
    files = sorted(glob.glob(os.path.join(root, "*", "*.gguf")))
    assert files, "no GGUF files under " + root
    for f in files:
        print(check_file(f))
    n = len(files)
    if extra:
        # phi2 / starcoder2 GGUF (F32) written to a temporary folder by tests/gen/gguf_write.py
        import subprocess
        import tempfile
        writer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gguf_write.py")
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("phi", "starcoder2"):
                out = os.path.join(tmp, name + ".gguf")
                subprocess.run([sys.executable, writer, os.path.join(root, name), out], check=True)
                print(check_file(out, os.path.join(root, name)))
                n += 1
    print("OK: %d GGUF files" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
