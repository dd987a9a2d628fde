#!/usr/bin/env python3
"""Inputs for tests/test_convert_robust.sh: converter sources that are valid-looking but wrong
in one way each, plus the controls they are made from. Standard library only.

Usage: /usr/bin/python3 tests/convert_cases.py OUT_DIR
Writes OUT_DIR/NAME/ (a Hugging Face folder) or OUT_DIR/NAME.json / NAME.gguf:
  hf_ok            tiny Llama checkpoint (config.json + model.safetensors, f32): converts
  hf_big           the same with one weight 70000.0: f32 and bf16 convert, f16 (max 65504) not
  hf_nan           the same with a NaN weight in model.layers.0.self_attn.q_proj.weight
  hf_inf           the same with +inf there
  hf_type_nul      model_type "llama\\u0000evil" (strcmp would read "llama")
  hf_ff_zero       intermediate_size 0 (not "absent": no default may replace it)
  hf_kv_zero       num_key_value_heads 0
  hf_theta_tiny    rope_theta 1e-50: finite as a double, 0 as a float
  hf_no_tensors    a safetensors header with no tensors (only __metadata__)
  tok_ok.json      tests/data/models/neox_tok/tokenizer.json as it is: converts
  tok_no_byte.json the same without the vocabulary token of byte 0x01 (no merge uses it)
  tok_empty_added.json  an added token whose content is ""
  tok_added_byte.json   an added token "<|x|>" taking the id of the byte token "e", which merges use
  gguf_ok.gguf     tests/data/gguf/tok/neox_tok-q8_0.gguf as it is: converts
  gguf_nan.gguf    the same with the f16 scale of one Q8_0 block set to NaN
  gguf_empty_token.gguf  tests/data/gguf/tok/neox_vocab.gguf with one vocabulary token spelled ""
"""
import json
import math
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


# --- a tiny Llama checkpoint ------------------------------------------------------------------

D, FF, HEADS, VOCAB, CTX = 32, 64, 2, 16, 16
CONFIG = {"model_type": "llama", "hidden_size": D, "intermediate_size": FF, "num_attention_heads": HEADS,
          "num_key_value_heads": HEADS, "num_hidden_layers": 1, "vocab_size": VOCAB,
          "max_position_embeddings": CTX, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
          "tie_word_embeddings": True, "hidden_act": "silu"}


def tensors():
    p = "model.layers.0."
    shapes = [("model.embed_tokens.weight", [VOCAB, D]), (p + "input_layernorm.weight", [D]),
              (p + "self_attn.q_proj.weight", [D, D]), (p + "self_attn.k_proj.weight", [D, D]),
              (p + "self_attn.v_proj.weight", [D, D]), (p + "self_attn.o_proj.weight", [D, D]),
              (p + "post_attention_layernorm.weight", [D]), (p + "mlp.gate_proj.weight", [FF, D]),
              (p + "mlp.up_proj.weight", [FF, D]), (p + "mlp.down_proj.weight", [D, FF]),
              ("model.norm.weight", [D])]
    out, x = [], 7
    for name, shape in shapes:
        n = 1
        for s in shape:
            n *= s
        vals = []
        for _ in range(n):
            x = (x * 1103515245 + 12345) % (1 << 31)
            vals.append(1.0 if len(shape) == 1 else (x / (1 << 31) - 0.5) * 0.2)
        out.append([name, shape, vals])
    return out


def safetensors(ts):
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, shape, vals in ts:
        blob = struct.pack("<%df" % len(vals), *vals)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def hf_case(out, name, config=None, poke=None, st=None):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    ts = tensors()
    if poke:
        poke(ts)
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(config if config is not None else json.dumps(CONFIG))
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(st if st is not None else safetensors(ts))


def set_q0(value):
    def poke(ts):
        for t in ts:
            if t[0].endswith("q_proj.weight"):
                t[2][3] = value
    return poke


def config_with(**kw):
    c = dict(CONFIG)
    c.update(kw)
    return json.dumps(c)


# --- tokenizer.json variants --------------------------------------------------------------------

def tok_cases(out):
    src = os.path.join(ROOT, "tests", "data", "models", "neox_tok", "tokenizer.json")
    base = json.load(open(src))

    def write(name, t):
        with open(os.path.join(out, name), "w") as f:
            json.dump(t, f, ensure_ascii=False)

    write("tok_ok.json", base)
    t = json.loads(json.dumps(base))
    used = set(x for m in t["model"]["merges"] for x in m.split(" "))
    victim = chr(0x101)  # byte 0x01 in the byte-level alphabet
    assert victim in t["model"]["vocab"] and victim not in used
    del t["model"]["vocab"][victim]
    write("tok_no_byte.json", t)
    t = json.loads(json.dumps(base))
    t["added_tokens"].append({"id": 300, "content": "", "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True})
    write("tok_empty_added.json", t)
    t = json.loads(json.dumps(base))
    byte_e = t["model"]["vocab"]["e"]
    assert any("e" in m.split(" ") for m in t["model"]["merges"])
    t["added_tokens"].append({"id": byte_e, "content": "<|x|>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True})
    write("tok_added_byte.json", t)


# --- GGUF variants ------------------------------------------------------------------------------

def gguf_walk(b):
    """(kv list of (key, type, value_offset, value_end, elem offsets), tensor infos, data_offset)."""
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)

    def string(pos):
        n = struct.unpack_from("<Q", b, pos)[0]
        return b[pos + 8:pos + 8 + n], pos + 8 + n

    scalar = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def value(pos, t, elems):
        if t == 8:
            elems.append(pos)
            return string(pos)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", b, pos)
            pos += 12
            for _ in range(n):
                pos = value(pos, et, elems)
            return pos
        return pos + scalar[t]

    kvs = []
    for _ in range(n_kv):
        key, pos = string(pos)
        t = struct.unpack_from("<I", b, pos)[0]
        pos += 4
        elems, start = [], pos
        pos = value(pos, t, elems)
        kvs.append((key.decode(), t, start, pos, elems))
    align = 32
    infos = []
    for _ in range(n_tensors):
        name, pos = string(pos)
        nd = struct.unpack_from("<I", b, pos)[0]
        pos += 4 + 8 * nd
        ttype, off = struct.unpack_from("<IQ", b, pos)
        pos += 12
        infos.append((name.decode(), ttype, off))
    return kvs, infos, (pos + align - 1) // align * align


def gguf_cases(out):
    tok = os.path.join(ROOT, "tests", "data", "gguf", "tok")
    model = open(os.path.join(tok, "neox_tok-q8_0.gguf"), "rb").read()
    open(os.path.join(out, "gguf_ok.gguf"), "wb").write(model)
    kvs, infos, data_at = gguf_walk(model)
    q8 = [i for i in infos if i[1] == 8]  # GGML Q8_0
    assert q8, "no Q8_0 tensor"
    b = bytearray(model)
    at = data_at + q8[0][2] + 34 * 3  # the fourth block's f16 scale
    b[at:at + 2] = struct.pack("<H", 0x7E00)
    open(os.path.join(out, "gguf_nan.gguf"), "wb").write(bytes(b))
    vocab = open(os.path.join(tok, "neox_vocab.gguf"), "rb").read()
    kvs, infos, data_at = gguf_walk(vocab)
    tokens = [k for k in kvs if k[0] == "tokenizer.ggml.tokens"][0]
    victim = tokens[4][100]  # token 100: a vocabulary token (not added), its length and bytes
    n = struct.unpack_from("<Q", vocab, victim)[0]
    b = vocab[:victim] + struct.pack("<Q", 0) + vocab[victim + 8 + n:]
    # the file shrank by n bytes before the data section: pad the metadata back to its size
    # is not possible in a string array, so keep it: a vocab-only file has no tensor data
    assert not infos
    open(os.path.join(out, "gguf_empty_token.gguf"), "wb").write(b)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    hf_case(out, "hf_ok")
    hf_case(out, "hf_big", poke=set_q0(70000.0))
    hf_case(out, "hf_nan", poke=set_q0(math.nan))
    hf_case(out, "hf_inf", poke=set_q0(math.inf))
    hf_case(out, "hf_type_nul", config=config_with(model_type="llama\u0000evil"))
    hf_case(out, "hf_ff_zero", config=config_with(intermediate_size=0))
    hf_case(out, "hf_kv_zero", config=config_with(num_key_value_heads=0))
    hf_case(out, "hf_theta_tiny", config=json.dumps(CONFIG).replace("10000.0", "1e-50"))
    h = json.dumps({"__metadata__": {"format": "pt"}}).encode()
    hf_case(out, "hf_no_tensors", st=struct.pack("<Q", len(h)) + h)
    tok_cases(out)
    gguf_cases(out)


if __name__ == "__main__":
    main()
