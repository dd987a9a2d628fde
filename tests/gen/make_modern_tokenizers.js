// make_modern_tokenizers.js - two small tokenizer.json files in the shapes of Gemma's and
// Phi-3's, made from the synthetic Llama vocabulary of tests/gen/make_synth_tokenizers.js
// (tests/data/tokenizer/llama_legacy.json: a BPE trained here on text written for it), and their
// golden ids from Hugging Face tokenizers itself (npm tokenizers@0.23.2).
//
//   export NODE_PATH=/tmp/npmhf/node_modules      (npm install tokenizers@0.23.2 there)
//   node tests/gen/make_modern_tokenizers.js tests/data/tokenizer
//
// writes
//   gemma.json      transformers' GemmaConverter shape: model BPE with byte_fallback, the
//                   "<0x09>" piece spelled as a literal tab (Gemma's converter does that),
//                   normalizer Replace(" ", U+2581) alone (no dummy prefix), pre-tokenizer
//                   Split(" ", merged_with_previous) (it finds no space after the normalizer),
//                   decoder Replace / ByteFallback / Fuse (no Strip), added special tokens
//                   <start_of_turn> <end_of_turn> after the vocab.
//   gemma_hf.txt    "text => id,id,..." (no post-processor tokens), escapes as in
//                   tests/gen/make_hf_vectors.js (\\ \n \t \r).
//   phi3.json       Phi-3's shape: the Llama-2 legacy file plus added tokens as Phi-3-mini has
//                   them: <|endoftext|> special without strip, <|assistant|> <|end|> <|user|>
//                   <|system|> special with rstrip true (they take the white space after them),
//                   <|placeholder1|> non-special with rstrip, and one token with lstrip
//                   (<|lstrip|>, not in Phi-3: the other side of the same rule).
//   phi3_hf.txt     the same format.
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

const dir = process.argv[2] || 'tests/data/tokenizer';
const base = JSON.parse(fs.readFileSync(path.join(dir, 'llama_legacy.json'), 'utf8'));
const clone = x => JSON.parse(JSON.stringify(x));
const addedToken = (id, content, special, lstrip, rstrip) => ({ id, content, single_word: false, lstrip, rstrip,
                                                                normalized: false, special });

function gemma() {
  const j = clone(base);
  const vocab = {};
  for (const [tok, id] of Object.entries(j.model.vocab)) vocab[tok === '<0x09>' ? '\t' : tok] = id;
  j.model.vocab = vocab;
  const n = Object.keys(vocab).length;
  j.added_tokens = [addedToken(0, '<unk>', true, false, false), addedToken(1, '<s>', true, false, false),
                    addedToken(2, '</s>', true, false, false), addedToken(n, '<start_of_turn>', true, false, false),
                    addedToken(n + 1, '<end_of_turn>', true, false, false)];
  j.normalizer = { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' };
  j.pre_tokenizer = { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false };
  j.decoder = { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
                                             { type: 'ByteFallback' }, { type: 'Fuse' }] };
  return j;
}

function phi3() {
  const j = clone(base);
  const n = Object.keys(j.model.vocab).length;
  j.added_tokens = j.added_tokens.concat([
    addedToken(n, '<|endoftext|>', true, false, false), addedToken(n + 1, '<|assistant|>', true, false, true),
    addedToken(n + 2, '<|placeholder1|>', false, false, true), addedToken(n + 3, '<|end|>', true, false, true),
    addedToken(n + 4, '<|user|>', true, false, true), addedToken(n + 5, '<|system|>', true, false, true),
    addedToken(n + 6, '<|lstrip|>', true, true, false)]);
  return j;
}

const common = [
  'Hello world', ' leading space', '  two leading spaces', 'trailing space ', 'a  b   c    d', ' ', '  ',
  '\n', 'line one\nline two\n', '\ttab\tseparated', 'mixed \t \n whitespace', '\t', '\t\t x', 'x\t',
  '0123456789', 'café crème brûlée', '中文 and 日本', '😀 emoji', 'e\u0301 decomposed',
  '\u00a0nbsp\u2003em', 'def count_boats(harbour):\n    total = 0\n    return total\n',
  "It's a good day, isn't it?", 'jqk jqk', 'The captain laughed and gave the robot a small shell.',
];
const gemmaTexts = common.concat([
  '<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n', '<start_of_turn> x', 'x <end_of_turn> y',
  '<start_of_turn><end_of_turn>', '  <start_of_turn>  ', '<start_of_turn', 'the robot<end_of_turn>',
]);
const phi3Texts = common.concat([
  '<|user|>\nHello<|end|>\n<|assistant|>\n', '<|system|>\nYou are a robot.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>',
  '<|user|>   spaces  <|end|>  \n x', 'x <|end|> y', '<|end|>\n\n\n', '<|end|>\u00a0\u2003y', '<|end|>',
  'a<|endoftext|> b', 'a <|endoftext|>  b', '<|placeholder1|>  z', 'x   <|lstrip|> y', '\n\t <|lstrip|>',
  'x <|lstrip|>', 'a<|user|><|end|>b', '<|user|>', '<|user', 'the robot<|end|>\n<|assistant|>\nyes',
]);

const esc = s => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r');
(async () => {
  for (const [name, json, texts] of [['gemma', gemma(), gemmaTexts], ['phi3', phi3(), phi3Texts]]) {
    const file = path.join(dir, name + '.json');
    fs.writeFileSync(file, JSON.stringify(json, null, 1) + '\n');
    const tok = Tokenizer.fromFile(file);
    let out = '';
    for (const t of texts) {
      const ids = (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
      out += esc(t) + ' => ' + ids.join(',') + '\n';
    }
    fs.writeFileSync(path.join(dir, name + '_hf.txt'), out);
  }
})();
