#!/usr/bin/python3
"""train_demo.py - make models/demo/: a small GPT-NeoX model trained on the King James Bible.

This script is the documentation of how every file in models/demo/ was made. Run it from the
repository root with Debian's Python (no pip):

    apt-get install -y python3-torch python3-numpy bible-kjv
    /usr/bin/python3 models/demo/train_demo.py            # corpus, tokenizer, training, export, references

Stages (all deterministic: fixed seeds, fixed step count, fixed data order):
  1. corpus     `bible -f "gen1:1-rev22:21"`, the leading "Ge1:1 " reference of each verse stripped,
                one verse per line. The last 5% (book order, cut at a verse boundary) is held out.
  2. tokenizer  byte-level BPE trained here on the training text: GPT-2 byte-to-unicode alphabet,
                GPT-2 pre-tokenizer split (ASCII form of the pattern), merges by pair frequency
                (ties: smallest pair), 256 byte tokens + merges + "<|endoftext|>" = VOCAB tokens.
                Written as a Hugging Face tokenizer.json.
  3. train      GPT-NeoX in plain PyTorch 1.13: pre-LN LayerNorm, fused per-head QKV, RoPE
                (NeoX half-split) on ROTARY_PCT of each head, exact-erf GELU FFN, sequential
                residuals (use_parallel_residual false), untied output matrix. AdamW, cosine LR.
                Checkpoints go to WORK/ckpt.pt every CKPT_EVERY steps; a rerun resumes from it.
  4. export     config.json + model.safetensors (f16, Hugging Face GPTNeoXForCausalLM names,
                written by the small writer below).
  5. reference  model.safetensors read back by a separate reader, upcast to float64, run by a
                separate float64 functional forward: reference/logits.f32 for a fixed prompt,
                reference/heldout_ce.txt for reference/heldout.txt with the windowing of
                `tfm-perplexity --ctx 64`.

Options: --steps N (default STEPS), --work DIR (checkpoints, default build/train_demo),
--export-only (skip training; export the checkpoint as it is), --threads N.
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import time

# OpenMP threads that spin while waiting crawl on a machine shared with other jobs.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# ---- settings ------------------------------------------------------------------------------
SEED = 1234
VOCAB = 2048                 # 256 bytes + 1791 merges + <|endoftext|>
EOT = "<|endoftext|>"
D_MODEL = 256
N_LAYERS = 4
N_HEADS = 4
D_FF = 768
CTX = 256                    # training context; also max_position_embeddings
ROTARY_PCT = 0.25            # like Pythia: RoPE on the first 16 of 64 dims per head
ROPE_BASE = 10000.0
LN_EPS = 1e-5
BATCH = 16
STEPS = 800
LR = 2e-3
LR_MIN = 1e-4
WARMUP = 100
WEIGHT_DECAY = 0.1
CKPT_EVERY = 50
EVAL_EVERY = 100
HELDOUT_FRAC = 0.05
PROMPT = "In the beginning God created"
REF_CTX = 64                 # windowing of reference/heldout_ce.txt (tfm-perplexity --ctx 64)

OUT = "models/demo"


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


# ---- 1. corpus -----------------------------------------------------------------------------
def load_corpus():
    raw = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], check=True,
                         stdout=subprocess.PIPE).stdout.decode("ascii")
    verses = []
    for line in raw.splitlines():
        m = re.match(r"^[0-9A-Za-z]+?[0-9]+:[0-9]+ (.*)$", line)
        if not m:
            raise SystemExit("unexpected line: %r" % line)
        verses.append(m.group(1))
    total = sum(len(v) + 1 for v in verses)
    cut, acc = len(verses), 0
    while acc < HELDOUT_FRAC * total:          # walk back from the end to 5% of the bytes
        cut -= 1
        acc += len(verses[cut]) + 1
    return verses[:cut], verses[cut:]


# ---- 2. tokenizer --------------------------------------------------------------------------
# ASCII form of the GPT-2 pattern 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
PAT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


B2U = bytes_to_unicode()


def pretokenize(text):
    return ["".join(B2U[b] for b in w.encode("utf-8")) for w in PAT.findall(text)]


def train_bpe(text):
    counts = {}
    for w in pretokenize(text):
        counts[w] = counts.get(w, 0) + 1
    words = [list(w) for w in counts]
    freqs = list(counts.values())
    pairs, where = {}, {}
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[(a, b)] = pairs.get((a, b), 0) + freqs[i]
            where.setdefault((a, b), set()).add(i)
    vocab = {B2U[b]: b for b in range(256)}
    merges = []
    while len(vocab) < VOCAB - 1:
        top = max(pairs.values())
        best = min(p for p, c in pairs.items() if c == top)   # ties: smallest pair
        merges.append(best)
        new = best[0] + best[1]
        if new not in vocab:
            vocab[new] = len(vocab)
        for i in where.pop(best, ()):
            w, f = words[i], freqs[i]
            if len(w) < 2:
                continue
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] -= f
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == best[0] and w[j + 1] == best[1]:
                    out.append(new)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for a, b in zip(out, out[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + f
                where.setdefault((a, b), set()).add(i)
        for p in [p for p, c in pairs.items() if c <= 0]:
            del pairs[p]
            where.pop(p, None)
    vocab[EOT] = len(vocab)
    return vocab, merges


class Tokenizer:
    """Reference encoder: GPT-2's bpe() (repeatedly merge the lowest-rank pair) per pre-token."""

    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.ranks = {tuple(m): i for i, m in enumerate(merges)}
        self.cache = {}
        u2b = {u: b for b, u in B2U.items()}
        self.decoder = {i: bytes(u2b[c] for c in t) for t, i in vocab.items() if t != EOT}

    def bpe(self, word):
        if word in self.cache:
            return self.cache[word]
        w = list(word)
        while len(w) > 1:
            cand = [(self.ranks.get(p, 1 << 30), p) for p in zip(w, w[1:])]
            rank, best = min(cand)
            if rank == 1 << 30:
                break
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == best[0] and w[j + 1] == best[1]:
                    out.append(w[j] + w[j + 1])
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            w = out
        ids = [self.vocab[t] for t in w]
        self.cache[word] = ids
        return ids

    def encode(self, text):
        ids = []
        for w in pretokenize(text):
            ids.extend(self.bpe(w))
        return ids

    def decode(self, ids):
        return b"".join(self.decoder.get(i, b"") for i in ids).decode("utf-8", "replace")


def tokenizer_json(vocab, merges):
    eot = vocab[EOT]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eot, "content": EOT, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": ["%s %s" % m for m in merges]},
    }


# ---- 3. model (training module) ------------------------------------------------------------
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(D_MODEL, eps=LN_EPS)
        self.query_key_value = nn.Linear(D_MODEL, 3 * D_MODEL)   # rows [n_heads, 3, d_head]
        self.dense = nn.Linear(D_MODEL, D_MODEL)
        self.post_attention_layernorm = nn.LayerNorm(D_MODEL, eps=LN_EPS)
        self.dense_h_to_4h = nn.Linear(D_MODEL, D_FF)
        self.dense_4h_to_h = nn.Linear(D_FF, D_MODEL)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        dh = D_MODEL // N_HEADS
        qkv = self.query_key_value(self.input_layernorm(x)).view(B, T, N_HEADS, 3 * dh)
        q, k, v = [t.transpose(1, 2) for t in qkv.split(dh, dim=-1)]   # [B, H, T, dh]
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        att = att.masked_fill(mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D_MODEL)
        x = x + self.dense(y)
        h = self.post_attention_layernorm(x)
        return x + self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(h)))


def rope_tables(T, rd, dtype=torch.float32):
    inv = 1.0 / (ROPE_BASE ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))
    f = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    emb = torch.cat([f, f], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rope(x, cos, sin):
    """NeoX half-split rotation of the first rd = cos.shape[-1] dims of every head."""
    rd = cos.shape[-1]
    T = x.shape[-2]
    r, p = x[..., :rd], x[..., rd:]
    r1, r2 = r[..., :rd // 2], r[..., rd // 2:]
    rot = torch.cat([-r2, r1], dim=-1)
    return torch.cat([r * cos[:T] + rot * sin[:T], p], dim=-1)


class GPTNeoX(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_in = nn.Embedding(VOCAB, D_MODEL)
        self.layers = nn.ModuleList([Block() for _ in range(N_LAYERS)])
        self.final_layer_norm = nn.LayerNorm(D_MODEL, eps=LN_EPS)
        self.embed_out = nn.Linear(D_MODEL, VOCAB, bias=False)
        cos, sin = rope_tables(CTX, int(D_MODEL // N_HEADS * ROTARY_PCT))
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.register_buffer("mask", torch.triu(torch.ones(CTX, CTX, dtype=torch.bool), 1),
                             persistent=False)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "layernorm" in name or "layer_norm" in name:
                nn.init.ones_(p)
            else:
                std = 0.02
                if name.endswith("dense.weight") or name.endswith("dense_4h_to_h.weight"):
                    std = 0.02 / math.sqrt(2 * N_LAYERS)
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx):
        x = self.embed_in(idx)
        for blk in self.layers:
            x = blk(x, self.cos, self.sin, self.mask)
        return self.embed_out(self.final_layer_norm(x))


def hf_state_dict(model):
    """Training-module parameters under Hugging Face GPTNeoXForCausalLM names."""
    out = {}
    for k, v in model.state_dict().items():
        if k.startswith("embed_out."):
            out[k] = v
        elif k.startswith("layers."):
            i, rest = k[len("layers."):].split(".", 1)
            sub = "attention." if rest.split(".")[0] in ("query_key_value", "dense") else \
                "mlp." if rest.startswith("dense_") else ""
            out["gpt_neox.layers.%s.%s%s" % (i, sub, rest)] = v
        else:
            out["gpt_neox." + k] = v
    return out


# ---- 4. export -----------------------------------------------------------------------------
def write_safetensors(path, tensors):
    """Minimal safetensors writer: u64 header size, JSON header (padded with spaces), data."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name].detach().cpu().numpy().astype("<f2"))
        b = a.tobytes()
        header[name] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def config_json(vocab):
    eot = vocab[EOT]
    return {
        "architectures": ["GPTNeoXForCausalLM"],
        "model_type": "gpt_neox",
        "hidden_size": D_MODEL,
        "num_attention_heads": N_HEADS,
        "num_hidden_layers": N_LAYERS,
        "intermediate_size": D_FF,
        "vocab_size": VOCAB,
        "max_position_embeddings": CTX,
        "layer_norm_eps": LN_EPS,
        "hidden_act": "gelu",
        "rotary_pct": ROTARY_PCT,
        "rotary_emb_base": int(ROPE_BASE),
        "use_parallel_residual": False,
        "tie_word_embeddings": False,
        "attention_bias": True,
        "attention_dropout": 0.0,
        "hidden_dropout": 0.0,
        "initializer_range": 0.02,
        "bos_token_id": eot,
        "eos_token_id": eot,
        "torch_dtype": "float16",
        "use_cache": True,
    }


# ---- 5. reference (independent of the training module) -------------------------------------
def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F16"
        a, b = e["data_offsets"]
        arr = np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f2").reshape(e["shape"])
        out[name] = torch.from_numpy(arr.astype(np.float64))
    return out


def reference_forward(W, cfg, ids):
    """float64 GPT-NeoX forward from Hugging Face tensors and config.json: logits [T, vocab]."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    dh = d // H
    rd = int(dh * cfg["rotary_pct"])
    eps = cfg["layer_norm_eps"]
    T = len(ids)
    pos = torch.arange(T, dtype=torch.float64)
    inv = 1.0 / (float(cfg["rotary_emb_base"]) ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))
    ang = torch.outer(pos, inv)                              # [T, rd/2]
    c, s = torch.cos(ang), torch.sin(ang)

    def ln(x, p):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * W[p + ".weight"] + W[p + ".bias"]

    def rot(x):                                              # [H, T, dh], pairs (j, j + rd/2)
        x = x.clone()
        a, b = x[..., :rd // 2].clone(), x[..., rd // 2:rd].clone()
        x[..., :rd // 2] = a * c - b * s
        x[..., rd // 2:rd] = b * c + a * s
        return x

    x = W["gpt_neox.embed_in.weight"][torch.tensor(ids)]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % i
        h = ln(x, p + "input_layernorm")
        qkv = h @ W[p + "attention.query_key_value.weight"].T + W[p + "attention.query_key_value.bias"]
        qkv = qkv.view(T, H, 3, dh)
        q, k, v = (qkv[:, :, j, :].permute(1, 0, 2) for j in range(3))
        q, k = rot(q), rot(k)
        sc = q @ k.transpose(1, 2) / math.sqrt(dh)
        sc = torch.where(causal, sc, torch.tensor(-math.inf, dtype=torch.float64))
        pr = torch.exp(sc - sc.max(-1, keepdim=True).values)
        pr = pr / pr.sum(-1, keepdim=True)
        y = (pr @ v).permute(1, 0, 2).reshape(T, d)
        x = x + y @ W[p + "attention.dense.weight"].T + W[p + "attention.dense.bias"]
        h = ln(x, p + "post_attention_layernorm")
        u = h @ W[p + "mlp.dense_h_to_4h.weight"].T + W[p + "mlp.dense_h_to_4h.bias"]
        u = 0.5 * u * (1.0 + torch.erf(u / math.sqrt(2.0)))
        x = x + u @ W[p + "mlp.dense_4h_to_h.weight"].T + W[p + "mlp.dense_4h_to_h.bias"]
    return ln(x, "gpt_neox.final_layer_norm") @ W["embed_out.weight"].T


def windowed_ce(W, cfg, ids, ctx):
    """tfm-perplexity windowing: non-overlapping windows of ctx tokens, each from position 0."""
    total, n = 0.0, 0
    for s in range(0, len(ids), ctx):
        w = ids[s:s + ctx]
        if len(w) < 2:
            continue
        lg = reference_forward(W, cfg, w)[:-1]
        lp = lg - torch.logsumexp(lg, dim=-1, keepdim=True)
        total -= lp[torch.arange(len(w) - 1), torch.tensor(w[1:])].sum().item()
        n += len(w) - 1
    return total / n, n


# ---- driver --------------------------------------------------------------------------------
def lr_at(step, steps):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, steps - WARMUP)
    return LR_MIN + 0.5 * (LR - LR_MIN) * (1 + math.cos(math.pi * min(1.0, t)))


@torch.no_grad()
def eval_ce(model, ids, ctx, max_windows=None):
    model.eval()
    total, n = 0.0, 0
    starts = list(range(0, len(ids) - 1, ctx))
    if max_windows:
        starts = starts[:max_windows]
    for s in starts:
        w = ids[s:s + ctx + 1]
        if len(w) < 2:
            continue
        x = torch.tensor(w[:-1])[None]
        y = torch.tensor(w[1:])[None]
        total += F.cross_entropy(model(x)[0], y[0], reduction="sum").item()
        n += len(w) - 1
    model.train()
    return total / n, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--work", default="build/train_demo")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--export-only", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(SEED)
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(OUT + "/reference", exist_ok=True)

    train_v, held_v = load_corpus()
    train_text = "\n".join(train_v) + "\n"
    held_text = "\n".join(held_v) + "\n"
    log("corpus: %d train verses (%d bytes), %d held-out verses (%d bytes), held out from %r" %
        (len(train_v), len(train_text), len(held_v), len(held_text), held_v[0][:40]))

    tok_path = OUT + "/tokenizer.json"
    t0 = time.time()
    vocab, merges = train_bpe(train_text)
    with open(tok_path, "w") as f:
        json.dump(tokenizer_json(vocab, merges), f, ensure_ascii=False, indent=None)
        f.write("\n")
    tok = Tokenizer(vocab, merges)
    train_ids = tok.encode(train_text)
    held_ids = tok.encode(held_text)
    assert tok.decode(train_ids[:2000]) == train_text[:len(tok.decode(train_ids[:2000]))]
    log("tokenizer: %d tokens, %d merges in %.0f s; train %d tokens (%.2f bytes/token), "
        "held-out %d tokens" % (len(vocab), len(merges), time.time() - t0, len(train_ids),
                                len(train_text) / len(train_ids), len(held_ids)))

    model = GPTNeoX()
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                             {"params": no_decay, "weight_decay": 0.0}], lr=LR, betas=(0.9, 0.95))
    ckpt = os.path.join(args.work, "ckpt.pt")
    step, elapsed = 0, 0.0
    gen = torch.Generator().manual_seed(SEED)
    if os.path.exists(ckpt):
        st = torch.load(ckpt)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        gen.set_state(st["gen"])
        step, elapsed = st["step"], st["elapsed"]
        log("resumed from %s at step %d" % (ckpt, step))
    log("model: %d parameters, d=%d layers=%d heads=%d ff=%d ctx=%d, batch %d, %d steps" %
        (n_params, D_MODEL, N_LAYERS, N_HEADS, D_FF, CTX, BATCH, args.steps))

    data = torch.tensor(train_ids, dtype=torch.long)
    t_start = time.time() - elapsed
    t_last = time.time()
    while not args.export_only and step < args.steps:
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps)
        ix = torch.randint(0, len(data) - CTX - 1, (BATCH,), generator=gen)
        x = torch.stack([data[i:i + CTX] for i in ix])
        y = torch.stack([data[i + 1:i + CTX + 1] for i in ix])
        loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 10 == 0:
            dt = time.time() - t_last
            t_last = time.time()
            log("step %d/%d loss %.4f lr %.2e  %.0f tok/s  %.1f min" %
                (step, args.steps, loss.item(), lr_at(step - 1, args.steps),
                 10 * BATCH * CTX / dt, (time.time() - t_start) / 60))
        if step % EVAL_EVERY == 0 or step == args.steps:
            ce, _ = eval_ce(model, held_ids, CTX, max_windows=40)
            log("step %d held-out (first 40 windows) %.4f nats/token" % (step, ce))
        if step % CKPT_EVERY == 0 or step == args.steps:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(),
                        "step": step, "elapsed": time.time() - t_start}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
    train_minutes = (time.time() - t_start) / 60 if not args.export_only else elapsed / 60

    # ---- export
    cfg = config_json(vocab)
    with open(OUT + "/config.json", "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    write_safetensors(OUT + "/model.safetensors", hf_state_dict(model))
    log("exported %s (step %d, %.1f min of training)" % (OUT, step, train_minutes))

    # held-out cross-entropy of the f32 training module over the whole held-out 5%
    ce, n = eval_ce(model, held_ids, CTX)
    bpb = ce * n / math.log(2) / len(held_text.encode())
    log("held-out (all %d tokens, ctx %d windows, f32 weights): %.4f nats/token, %.4f bits/byte" %
        (n, CTX, ce, bpb))

    # ---- reference files, from the saved f16 weights only
    W = read_safetensors(OUT + "/model.safetensors")
    with open(OUT + "/config.json") as f:
        cfg = json.load(f)
    ref = OUT + "/reference/"
    ids = tok.encode(PROMPT)
    with open(ref + "prompt.txt", "w") as f:
        f.write(PROMPT)
    with open(ref + "prompt_tokens.txt", "w") as f:
        f.write(" ".join(str(i) for i in ids) + "\n")
    logits = reference_forward(W, cfg, ids)
    logits.numpy().astype("<f4").tofile(ref + "logits.f32")
    # held-out slice: whole verses from Revelation 21:1 ("And I saw a new heaven ...") up to ~3 KB
    start = max(i for i, v in enumerate(held_v) if v.startswith("And I saw a new heaven and a new earth"))
    sl = []
    while len("\n".join(sl)) < 3000:
        sl.append(held_v[start + len(sl)])
    slice_text = "\n".join(sl) + "\n"
    with open(ref + "heldout.txt", "w") as f:
        f.write(slice_text)
    sids = tok.encode(slice_text)
    with open(ref + "heldout_tokens.txt", "w") as f:
        f.write(" ".join(str(i) for i in sids) + "\n")
    rce, rn = windowed_ce(W, cfg, sids, REF_CTX)
    with open(ref + "heldout_ce.txt", "w") as f:
        f.write("%.6f\n" % rce)
    log("reference: prompt %s; heldout.txt %d bytes %d tokens: %.6f nats/token (ctx %d)" %
        (ids, len(slice_text), len(sids), rce, REF_CTX))
    # a sample, for the README
    model.eval()
    g = torch.Generator().manual_seed(SEED)
    x = torch.tensor(ids)[None]
    with torch.no_grad():
        for _ in range(60):
            lg = model(x[:, -CTX:])[0, -1] / 0.8
            nxt = torch.multinomial(lg.softmax(-1), 1, generator=g)
            x = torch.cat([x, nxt[None]], dim=1)
    log("sample (T=0.8): %r" % tok.decode(x[0].tolist()))


if __name__ == "__main__":
    main()
