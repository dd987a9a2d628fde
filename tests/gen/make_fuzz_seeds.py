#!/usr/bin/env python3
"""Seeds for tests/fuzz_convert.c's llama2.c harness (FUZZ_LLAMA2C), written into tests/fuzz/llama2c.

Input layout of that harness: u32 little-endian n, n bytes of a llama2.c checkpoint, then its
tokenizer.bin. The checkpoints are tiny Llama shapes (dim 8, hidden 16, 1 layer, 2 heads,
seq_len 8) in both of llama2.c's float formats (version 0: seven int32 then the weights and
the two RoPE tables; version 1: the 256-byte "ak42" header), with deterministic weights; the
tokenizer has <unk>, <s>, </s>, the 256 <0xNN> byte tokens and a few pieces. Standard library
only; rerunning writes the same bytes. Usage: /usr/bin/python3 tests/gen/make_fuzz_seeds.py
"""
import os
import struct

DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, SEQ = 8, 16, 1, 2, 2, 8
PIECES = [" a", " b", "ab", " ab", "ba"]
VOCAB = 3 + 256 + len(PIECES)


def floats(n, seed):
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        out.append((x / (1 << 31) - 0.5) * 0.2)
    return struct.pack("<%df" % n, *out)


def weights_v0():
    head = DIM // HEADS
    kv = KV_HEADS * head
    parts = [floats(VOCAB * DIM, 1), floats(LAYERS * DIM, 2), floats(LAYERS * DIM * DIM, 3),
             floats(LAYERS * kv * DIM, 4), floats(LAYERS * kv * DIM, 5), floats(LAYERS * DIM * DIM, 6),
             floats(LAYERS * DIM, 7), floats(LAYERS * HIDDEN * DIM, 8), floats(LAYERS * DIM * HIDDEN, 9),
             floats(LAYERS * HIDDEN * DIM, 10), floats(DIM, 11),
             floats(SEQ * head // 2, 12), floats(SEQ * head // 2, 13)]
    return b"".join(parts)


def weights_v1():
    head = DIM // HEADS
    kv = KV_HEADS * head
    parts = [floats(LAYERS * DIM, 2), floats(LAYERS * DIM, 7), floats(DIM, 11), floats(VOCAB * DIM, 1),
             floats(LAYERS * DIM * DIM, 3), floats(LAYERS * kv * DIM, 4), floats(LAYERS * kv * DIM, 5),
             floats(LAYERS * DIM * DIM, 6), floats(LAYERS * HIDDEN * DIM, 8), floats(LAYERS * DIM * HIDDEN, 9),
             floats(LAYERS * HIDDEN * DIM, 10)]
    return b"".join(parts)


def config(vocab):
    return struct.pack("<7i", DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, vocab, SEQ)


def tokenizer():
    toks = [(0.0, b"<unk>"), (0.0, b"\n<s>\n"), (0.0, b"\n</s>\n")]
    toks += [(0.0, b"<0x%02X>" % b) for b in range(256)]
    toks += [(float(i + 1), p.encode()) for i, p in enumerate(PIECES)]
    out = struct.pack("<i", max(len(t) for _, t in toks))
    for score, text in toks:
        out += struct.pack("<fi", score, len(text)) + text
    return out


def seed(ckpt):
    return struct.pack("<I", len(ckpt)) + ckpt + tokenizer()


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "llama2c")
    os.makedirs(here, exist_ok=True)
    v0 = config(VOCAB) + weights_v0()
    v1 = struct.pack("<Ii", 0x616B3432, 1) + config(VOCAB) + b"\x01"
    v1 = v1 + b"\0" * (256 - len(v1)) + weights_v1()
    for name, ckpt in (("tiny_v0", v0), ("tiny_v1", v1)):
        with open(os.path.join(here, name), "wb") as f:
            f.write(seed(ckpt))


if __name__ == "__main__":
    main()
