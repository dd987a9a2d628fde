#!/usr/bin/env python3
"""make_random_gpt2.py - a random-weight GPT-2-124M-shape checkpoint in Hugging Face layout, for
measuring frame budgets (examples/npc.c) on the model size the embedding issue was reported on.

    /usr/bin/python3 tools/make_random_gpt2.py OUT_DIR [TOKENIZER_DIR]
    build/tfm-convert OUT_DIR -o build/gpt2-124m-random.tfm --type f16

Writes OUT_DIR/config.json (GPT-2 small: 12 layers, 768 wide, 12 heads, 1024 positions, 50257
tokens) and OUT_DIR/model.safetensors (float32, N(0, 0.02) as GPT-2 initializes, LayerNorm
weights 1, biases 0; seed 124), and copies vocab.json and merges.txt from TOKENIZER_DIR
(default ../shared/tokenizers/gpt2, the real GPT-2 tokenizer) so the model tokenizes text.
The weights are noise: the text it writes is too. Nothing here goes into the repository."""
import json
import os
import shutil
import struct
import sys

import numpy as np

C, LAYERS, HEADS, CTX, VOCAB = 768, 12, 12, 1024, 50257


def tensors(rng):
    def mat(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype("<f4")

    out = [("wte.weight", mat(VOCAB, C)), ("wpe.weight", mat(CTX, C))]
    for i in range(LAYERS):
        L = "h.%d." % i
        out += [(L + "ln_1.weight", np.ones(C, "<f4")), (L + "ln_1.bias", np.zeros(C, "<f4")),
                (L + "attn.c_attn.weight", mat(C, 3 * C)), (L + "attn.c_attn.bias", np.zeros(3 * C, "<f4")),
                (L + "attn.c_proj.weight", mat(C, C)), (L + "attn.c_proj.bias", np.zeros(C, "<f4")),
                (L + "ln_2.weight", np.ones(C, "<f4")), (L + "ln_2.bias", np.zeros(C, "<f4")),
                (L + "mlp.c_fc.weight", mat(C, 4 * C)), (L + "mlp.c_fc.bias", np.zeros(4 * C, "<f4")),
                (L + "mlp.c_proj.weight", mat(4 * C, C)), (L + "mlp.c_proj.bias", np.zeros(C, "<f4"))]
    out += [("ln_f.weight", np.ones(C, "<f4")), ("ln_f.bias", np.zeros(C, "<f4"))]
    return out


def write_safetensors(path, items):  # format: ../shared/REFERENCE.md E.1
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, arr in items:
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + arr.nbytes]}
        off += arr.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, arr in items:
            f.write(arr.tobytes())


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    tok = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                                 "tokenizers", "gpt2")
    os.makedirs(out, exist_ok=True)
    config = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": 50256,
              "eos_token_id": 50256, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": CTX, "n_embd": C,
              "n_head": HEADS, "n_inner": None, "n_layer": LAYERS, "n_positions": CTX,
              "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True, "vocab_size": VOCAB}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors(np.random.default_rng(124)))
    for name in ("vocab.json", "merges.txt"):
        shutil.copyfile(os.path.join(tok, name), os.path.join(out, name))


if __name__ == "__main__":
    main()
