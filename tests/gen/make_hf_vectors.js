// make_hf_vectors.js - golden token ids from Hugging Face tokenizers itself (the npm package
// tokenizers@0.23.2: the Rust library's Node binding, prebuilt for linux-x64).
//
//   mkdir -p /tmp/npmhf && cd /tmp/npmhf && npm install tokenizers@0.23.2
//   export NODE_PATH=/tmp/npmhf/node_modules
//   node tests/gen/make_hf_vectors.js neox /work/shared/tokenizers/gpt-neox-20b/tokenizer.json \
//       > tests/data/tokenizer/neox_extra.txt
//   node tests/gen/make_hf_vectors.js gpt2 /work/shared/tokenizers/gpt2 > tests/data/tokenizer/gpt2_hf.txt
//   node tests/gen/make_hf_vectors.js neox-decode /work/shared/tokenizers/gpt-neox-20b/tokenizer.json \
//       > tests/data/tokenizer/neox_hf_decode.txt
//
// neox-decode writes "id,id,... => HEX": 300 random id sequences mixing single-byte tokens of
// every byte NeoX has (so most are not valid UTF-8 on their own) with words, emoji pieces and
// added tokens, and the UTF-8 bytes (hex) of Hugging Face's decode (its ByteLevel decoder ends
// in String::from_utf8_lossy: one U+FFFD for each maximal invalid subpart).
//
// gpt2 builds the tokenizer Hugging Face's GPT2TokenizerFast is: BPE from vocab.json +
// merges.txt, the ByteLevel pre-tokenizer (no prefix space) and <|endoftext|> as a special token.
// Output: "text => id,id,..." per line; backslash, newline, tab and carriage return in the text
// are written \\, \n, \t and \r. The texts stress what GPT-NeoX adds to GPT-2: NFC (composed and
// decomposed input), the whitespace-run added tokens, special tokens inside text, and Unicode
// white space as the regex's \s sees it (U+0085, U+00A0, U+2028, U+3000 are; U+FEFF and
// U+001C..U+001F are not). The last 200 cases are pseudo-random strings (fixed seed) over
// scripts whose character classes are stable across Unicode versions.
'use strict';
const { Tokenizer, BPE, byteLevelPreTokenizer } = require('tokenizers');

const texts = [
  'Hello world',
  'café cafe\u0301 CAFE\u0301 naïve nai\u0308ve',
  '\u212B \u2126 \u0041\u030A \u00C5',
  'Ångström Ångström',
  '\u1100\u1161\u11A8 \uAC01 \u1112\u1161\u11AB\u1100\u1173\u11AF',
  'e\u0301\u0316 e\u0316\u0301 a\u0328\u0301 \u0105\u0301',
  '\u0301 leading mark',
  'q\u0307\u0323 \u1E0B\u0323',
  '\u0958\u0959 \u0915\u093C',
  'x  y   z    w     v      u',
  '  two leading',
  'trailing two  ',
  'def f():\n    return 1\n        deeper\n',
  '\tif (a) {\n\t\tb();\n\t}\n',
  'a' + ' '.repeat(24) + 'b',
  'a' + ' '.repeat(25) + 'b',
  'a' + ' '.repeat(49) + 'b',
  ' '.repeat(30),
  'text<|endoftext|>more<|padding|>end',
  '<|endoftext|><|endoftext|>',
  ' <|endoftext|> ',
  'x<|endoftext',
  'spaces\u00a0nbsp\u2003em\u3000ideo',
  'nel\u0085next line',
  'line\u2028sep\u2029para',
  'bom\ufeffinside',
  'info\u001fsep\u001cfile',
  'vt\u000bff\u000ccr\r\nlf',
  '   \n   \n',
  ' \u3000 \u00a0x',
  "don't won't I'm we'll they'd you've she's",
  "'S 'T 'RE mixed'Case",
  '123 4567 89012 3.5e-7',
  '٣٤٥ ۶۷ ߁߂ १२३',
  '日本語テキスト 中文 한국어',
  '😀 👍🏽 👨‍👩‍👧 🇯🇵',
  'ﬁnance ﬂow Ｆｕｌｌ',
  '½ ² ⅷ ①',
  'https://github.com/EleutherAI/gpt-neox?tab=readme#usage',
  '{"a": [1, 2.5, true, null]}',
  '    "indented": {\n        "deep": 1\n    }',
  '=====\n-----\n*****',
  'x'.repeat(1024),
  '\u00e9'.repeat(300),
  'e\u0301'.repeat(200),
  'Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034da',
];

// xorshift32 with a fixed seed
let state = 2463534242;
function rand(n) {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state % n;
}
const ranges = [
  [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x20], [0x0a, 0x0a], [0x09, 0x09],
  [0xc0, 0x17f], [0x300, 0x314], [0x316, 0x333], [0x391, 0x3a9], [0x3b1, 0x3c9],
  [0x410, 0x44f], [0x5d0, 0x5ea], [0x627, 0x64a], [0x660, 0x669], [0x905, 0x939],
  [0x966, 0x96f], [0x1100, 0x1112], [0x1161, 0x1175], [0x11a8, 0x11c2], [0xac00, 0xd7a3],
  [0x3041, 0x3096], [0x4e00, 0x9fa5], [0x2000, 0x200a], [0x2010, 0x2027], [0xff01, 0xff5e],
  [0x1f600, 0x1f64f], [0x2160, 0x2188], [0x2460, 0x249b],
];
for (let i = 0; i < 200; i++) {
  let s = '';
  const len = 1 + rand(16);
  for (let j = 0; j < len; j++) {
    const r = ranges[rand(ranges.length)];
    s += String.fromCodePoint(r[0] + rand(r[1] - r[0] + 1));
  }
  texts.push(s);
}

async function load(mode, src) {
  if (mode !== 'gpt2') return Tokenizer.fromFile(src);  // neox, neox-decode
  const tok = new Tokenizer(await BPE.fromFile(src + '/vocab.json', src + '/merges.txt'));
  tok.setPreTokenizer(byteLevelPreTokenizer(false, true));
  tok.addSpecialTokens(['<|endoftext|>']);
  return tok;
}

// The byte-to-unicode alphabet: the token of each single byte (null where there is none)
function byteTokens(tok) {
  const ids = [];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    ids.push(tok.tokenToId(String.fromCodePoint(printable ? b : 256 + n++)));
  }
  return ids;
}

async function decodeCases(tok) {
  const bytes = byteTokens(tok).filter(id => id !== null && id !== undefined);
  const others = [12092, 1533, 13, 0, 50276, 50254, 36241, 6868, 229, 9129, 8582, 98, 20442];
  for (let i = 0; i < 300; i++) {
    const ids = [];
    const len = 1 + rand(8);
    for (let j = 0; j < len; j++) {
      const r = rand(10);
      ids.push(r < 5 ? bytes[0x80 + rand(bytes.length - 0x80)] : r < 7 ? bytes[rand(bytes.length)]
                                                       : others[rand(others.length)]);
    }
    const text = await tok.decode(ids, false);
    process.stdout.write(ids.join(',') + ' => ' + Buffer.from(text, 'utf8').toString('hex') + '\n');
  }
}

const esc = s => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r');
(async () => {
  const tok = await load(process.argv[2], process.argv[3]);
  if (process.argv[2] === 'neox-decode') return decodeCases(tok);
  for (const t of texts) {
    const e = await tok.encode(t);
    process.stdout.write(esc(t) + ' => ' + e.getIds().join(',') + '\n');
  }
})();
