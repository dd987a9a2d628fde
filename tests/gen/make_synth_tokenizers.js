// make_synth_tokenizers.js - small synthetic tokenizer.json files for tests/test_convert_tokenizer.c, in
// the shapes of real checkpoints, trained here (a plain BPE trainer, no download) on the
// self-written text below. No library is needed to make them; Hugging Face tokenizers (npm)
// then gives the golden ids (tests/gen/make_synth_vectors.js).
//
//   node tests/gen/make_synth_tokenizers.js tests/data/tokenizer
//
// writes
//   llama_legacy.json  Llama-2 as transformers converts it (legacy): model BPE with
//                      byte_fallback, vocab <unk> <s> </s>, <0x00>..<0xFF>, then single
//                      characters, then merged pieces; normalizer Sequence[Prepend(U+2581),
//                      Replace(" ", U+2581)]; no pre-tokenizer; decoder Replace / ByteFallback /
//                      Fuse / Strip; TemplateProcessing "<s> $A".
//   llama_first.json   the same vocab with no normalizer and a Metaspace pre-tokenizer,
//                      prepend_scheme "first", split false (transformers' non-legacy layout).
//   llama_always.json  Metaspace prepend_scheme "always", split false.
//   digits.json        StarCoder2's shape: byte-level BPE, pre-tokenizer Sequence[Digits
//                      (individual_digits), ByteLevel(use_regex)], <|endoftext|> special.
//   llama3.json        Llama-3's shape: byte-level BPE with ignore_merges, pre-tokenizer
//                      Sequence[Split(the Llama-3 regex, Isolated), ByteLevel(use_regex false)],
//                      <|begin_of_text|> / <|end_of_text|> after the vocab, post-processor
//                      Sequence[ByteLevel, TemplateProcessing "<|begin_of_text|> $A"]; the
//                      tokens "qqq" and " qqq" have no merge (only ignore_merges reaches them).
//   qwen2.json         Qwen2's shape on the llama3.json vocab: normalizer NFC, the same Split
//                      with \p{N} instead of \p{N}{1,3}, no ignore_merges, added tokens
//                      <|endoftext|> <|im_start|> <|im_end|>, no BOS.
//
// The Llama merges are listed the way Hugging Face's SentencePiece converter lists them (every
// split of a piece into two vocab pieces, ordered by the piece), except that a fixed fifth of
// the extra splits is left out, so some pairs whose concatenation is a token have no merge
// (Hugging Face never merges those; a score-only merger would), and three crafted merges come
// first (see "jqk" below). The digits file has a few
// merges of digits (1+2, 0+0, " "+1, x+1) that the Digits pre-tokenizer must make unreachable.
'use strict';
const fs = require('fs');
const path = require('path');

const TEXT = `Once upon a time there was a little robot who lived in a quiet town by the sea.
Every morning the robot walked to the harbour, counted the boats, and wrote the numbers in a book.
The fishermen liked the robot because it never forgot a name and never told a secret.
"Good morning," said the old captain. "How many boats are out today?"
"Twelve," answered the robot, "and three more are coming back before noon."
The captain laughed and gave the robot a small shell, which it kept in a box under the stairs.
In the evening the town was calm; the lights came on one by one, and the sea was dark and still.
The robot thought about the shell, the boats and the people, and it was happy.
Café au lait, crème brûlée and a naïve résumé: the robot learned French words from a menu.
Über den Wolken, schön und grün; mañana, señor; 中文 and 日本 were written on a postcard.
def count_boats(harbour):
    total = 0
    for boat in harbour.boats:
        if boat.is_out():
            total += 1
    return total
  two  spaces  between  words  and   three   here.
The end of the story is not the end of the robot, who still walks to the harbour every day.
It's a good day, isn't it? We'll see, they'd say, and you've heard it, I'm sure.
`;

// Pieces of the Llama-style spelled text: an optional run of U+2581, then no U+2581.
function llamaPieces(line) {
  const s = '\u2581' + line.replace(/ /g, '\u2581');
  return s.match(/\u2581*[^\u2581]+|\u2581+$/gu) || [];
}

// A plain BPE trainer over words given as arrays of symbols: the most frequent adjacent pair
// merges (ties: the smallest pair as a string), n times or until no pair is left.
function train(words, n) {
  const merges = [];
  for (let m = 0; m < n; m++) {
    const counts = new Map();
    for (const [w, c] of words)
      for (let i = 0; i + 1 < w.length; i++) {
        const k = w[i] + '\u0000' + w[i + 1];
        counts.set(k, (counts.get(k) || 0) + c);
      }
    let best = null, bestCount = 0;
    for (const [k, c] of counts)
      if (c > bestCount || (c === bestCount && best !== null && k < best)) { best = k; bestCount = c; }
    if (best === null) break;
    const [a, b] = best.split('\u0000');
    merges.push([a, b]);
    for (const entry of words) {
      const w = entry[0], out = [];
      for (let i = 0; i < w.length; i++) {
        if (i + 1 < w.length && w[i] === a && w[i + 1] === b) { out.push(a + b); i++; }
        else out.push(w[i]);
      }
      entry[0] = out;
    }
  }
  return merges;
}

function countWords(pieces, split) {
  const freq = new Map();
  for (const p of pieces) freq.set(p, (freq.get(p) || 0) + 1);
  return [...freq.entries()].sort().map(([p, c]) => [split(p), c]);
}

const added = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
                                   normalized: false, special: true });

function llama(outDir) {
  const pieces = TEXT.split('\n').filter(l => l.length).flatMap(llamaPieces);
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++)
    vocab['<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>'] = 3 + b;
  let next = 259;
  const charFreq = new Map();
  for (const p of pieces) for (const ch of p) charFreq.set(ch, (charFreq.get(ch) || 0) + 1);
  const chars = [...charFreq.entries()].sort((x, y) => y[1] - x[1] || x[0].codePointAt(0) - y[0].codePointAt(0));
  for (const [ch] of chars) vocab[ch] = next++;
  const trained = train(countWords(pieces, p => [...p]), 420);
  for (const [a, b] of trained) if (!(a + b in vocab)) vocab[a + b] = next++;
  // crafted: "jqk" has the merge jq + k only; on "jqk", q + k (rank 0) merges first and then
  // nothing does (no merge j + qk), while a score-only merger would go on to "jqk"
  for (const tok of ['j', 'q', 'k', 'qk', 'jq', 'jqk']) if (!(tok in vocab)) vocab[tok] = next++;
  const crafted = new Set(['qk', 'jq', 'jqk']);
  // merges as the SentencePiece converter lists them: each piece's splits, pieces in id order
  const primary = new Set(trained.map(([a, b]) => a + '\u0000' + b));
  const merges = [['q', 'k'], ['j', 'q'], ['jq', 'k']];
  const ids = Object.entries(vocab).sort((x, y) => x[1] - y[1]);
  for (const [tok, id] of ids) {
    if (id < 259 || crafted.has(tok)) continue;
    const cps = [...tok];
    for (let k = 1; k < cps.length; k++) {
      const a = cps.slice(0, k).join(''), b = cps.slice(k).join('');
      if (!(a in vocab) || !(b in vocab) || vocab[a] < 259 || vocab[b] < 259) continue;
      if (!primary.has(a + '\u0000' + b) && (id * 7 + k) % 5 === 0) continue;
      merges.push([a, b]);
    }
  }
  const model = { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null,
                  end_of_word_suffix: null, fuse_unk: true, byte_fallback: true,
                  ignore_merges: false, vocab, merges };
  const post = { type: 'TemplateProcessing',
                 single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
                 pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
                        { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
                 special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } };
  const decoder = { type: 'Sequence', decoders: [
    { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' },
    { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] };
  const base = { version: '1.0', truncation: null, padding: null,
                 added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')] };
  const files = {
    'llama_legacy.json': { normalizer: { type: 'Sequence', normalizers: [
        { type: 'Prepend', prepend: '\u2581' },
        { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] }, pre_tokenizer: null },
    'llama_first.json': { normalizer: null, pre_tokenizer: { type: 'Metaspace', replacement: '\u2581',
                                                             prepend_scheme: 'first', split: false } },
    'llama_always.json': { normalizer: null, pre_tokenizer: { type: 'Metaspace', replacement: '\u2581',
                                                              prepend_scheme: 'always', split: false } },
  };
  for (const [name, parts] of Object.entries(files)) {
    const j = Object.assign({}, base, parts, { post_processor: post, decoder, model });
    fs.writeFileSync(path.join(outDir, name), JSON.stringify(j, null, 1) + '\n');
  }
  return [Object.keys(vocab).length, merges.length];
}

// GPT-2's byte-to-unicode alphabet
function byteAlphabet() {
  const out = [];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    out.push(String.fromCodePoint(printable ? b : 256 + n++));
  }
  return out;
}

function digits(outDir) {
  const alpha = byteAlphabet();
  const spell = s => [...Buffer.from(s, 'utf8')].map(b => alpha[b]);
  const re = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\p{N}|\s+(?!\S)|\s+/gu;
  const pieces = TEXT.match(re);
  const vocab = { '<|endoftext|>': 0, '<fim_prefix>': 1, '<fim_middle>': 2 };
  let next = 3;
  for (const ch of alpha) vocab[ch] = next++;
  const merges = train(countWords(pieces, spell), 300);
  const extra = [['1', '2'], ['0', '0'], ['\u0120', '1'], ['x', '1'], ['\u0120', '3']];
  for (const [a, b] of [...merges, ...extra]) if (!(a + b in vocab)) vocab[a + b] = next++;
  merges.unshift(...extra); // rank 0..4: digits would merge first if they were not split
  const j = { version: '1.0', truncation: null, padding: null,
              added_tokens: [added(0, '<|endoftext|>'), added(1, '<fim_prefix>'), added(2, '<fim_middle>')],
              normalizer: null,
              pre_tokenizer: { type: 'Sequence', pretokenizers: [
                { type: 'Digits', individual_digits: true },
                { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] },
              post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
              decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
              model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
                       end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
                       ignore_merges: false, vocab, merges } };
  fs.writeFileSync(path.join(outDir, 'digits.json'), JSON.stringify(j, null, 1) + '\n');
  return [Object.keys(vocab).length, merges.length];
}

// Llama-3's pre-tokenizer regex (as its tokenizer.json has it) and a JavaScript spelling of it
// for training (JavaScript has no (?i:...) group).
const LLAMA3_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_REGEX = LLAMA3_REGEX.replace('\\p{N}{1,3}', '\\p{N}');
const LLAMA3_JS = /'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

function llama3(outDir) {
  const alpha = byteAlphabet();
  const spell = s => [...Buffer.from(s, 'utf8')].map(b => alpha[b]);
  const pieces = TEXT.match(LLAMA3_JS);
  const vocab = {};
  let next = 0;
  for (const ch of alpha) vocab[ch] = next++;
  const merges = train(countWords(pieces, spell), 350);
  merges.push(['1', '2'], ['2', '3'], ['12', '3']); // digits merge: Llama-3 keeps up to 3 together
  for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = next++;
  // ignore_merges: "qqq" and " qqq" are tokens no merge makes; HF emits them whole
  for (const tok of ['qqq', '\u0120qqq']) if (!(tok in vocab)) vocab[tok] = next++;
  const bot = next, eot = next + 1;
  const j = { version: '1.0', truncation: null, padding: null,
              added_tokens: [added(bot, '<|begin_of_text|>'), added(eot, '<|end_of_text|>')],
              normalizer: null,
              pre_tokenizer: { type: 'Sequence', pretokenizers: [
                { type: 'Split', pattern: { Regex: LLAMA3_REGEX }, behavior: 'Isolated', invert: false },
                { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }] },
              post_processor: { type: 'Sequence', processors: [
                { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
                { type: 'TemplateProcessing',
                  single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
                  pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
                         { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
                  special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [bot], tokens: ['<|begin_of_text|>'] } } }] },
              decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
              model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
                       end_of_word_suffix: null, fuse_unk: false, byte_fallback: false,
                       ignore_merges: true, vocab, merges } };
  fs.writeFileSync(path.join(outDir, 'llama3.json'), JSON.stringify(j, null, 1) + '\n');
  // Qwen2's shape on the same vocab: NFC, the pattern with \p{N} alone, no ignore_merges, no BOS
  const q = JSON.parse(JSON.stringify(j));
  q.added_tokens = [added(bot, '<|endoftext|>'), added(eot, '<|im_start|>'), added(eot + 1, '<|im_end|>')];
  q.normalizer = { type: 'NFC' };
  q.pre_tokenizer.pretokenizers[0].pattern.Regex = QWEN2_REGEX;
  q.post_processor = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  q.model.ignore_merges = false;
  fs.writeFileSync(path.join(outDir, 'qwen2.json'), JSON.stringify(q, null, 1) + '\n');
  return [next + 2, merges.length];
}

const outDir = process.argv[2] || '.';
const l = llama(outDir), d = digits(outDir), l3 = llama3(outDir);
process.stderr.write(`llama: ${l[0]} tokens, ${l[1]} merges; digits: ${d[0]} tokens, ${d[1]} merges; ` +
                     `llama3: ${l3[0]} tokens, ${l3[1]} merges\n`);
