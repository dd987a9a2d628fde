// make_synth_vectors.js - golden ids for the synthetic tokenizers of make_synth_tokenizers.js,
// from Hugging Face tokenizers itself (npm tokenizers@0.23.2, see make_hf_vectors.js).
//
//   export NODE_PATH=/tmp/npmhf/node_modules
//   D=tests/data/tokenizer
//   for v in legacy first always; do
//     node tests/gen/make_synth_vectors.js llama $D/llama_$v.json > $D/llama_${v}_hf.txt; done
//   node tests/gen/make_synth_vectors.js llama-decode $D/llama_legacy.json > $D/llama_hf_decode.txt
//   node tests/gen/make_synth_vectors.js digits $D/digits.json > $D/digits_hf.txt
//   node tests/gen/make_synth_vectors.js llama3 $D/llama3.json > $D/llama3_hf.txt
//   node tests/gen/make_synth_vectors.js llama3-pretok $D/llama3.json > $D/llama3_pretok_hf.txt
//   node tests/gen/make_synth_vectors.js qwen2 $D/qwen2.json > $D/qwen2_hf.txt
//   node tests/gen/make_synth_vectors.js qwen2-pretok $D/qwen2.json > $D/qwen2_pretok_hf.txt
//
// llama / digits / llama3: "text => id,id,..." per line, encoded without the post-processor's special
// tokens (tfm_model_tokenize adds none); text escapes as in make_hf_vectors.js (\\ \n \t \r).
// llama3-pretok, qwen2-pretok: "text => n,n,..." the byte length of each piece of the pre-tokenizer alone
// (Split with the Llama-3 regex, then ByteLevel), to test the scanner directly.
// llama-decode: "id,id,... => HEX" for the llama texts: the ids again and the UTF-8 bytes (hex)
// of Hugging Face's decode (skip_special_tokens false; its Strip decoder drops one leading
// space). The last 100 (llama) / 60 (digits) / 80 (llama3) texts are pseudo-random (fixed seed) joins of
// the pieces listed below.
'use strict';
const { Tokenizer } = require('tokenizers');

const llamaTexts = [
  'Hello world', 'Once upon a time', 'the robot', 'The robot walked to the harbour.',
  ' leading space', '  two leading spaces', '   three', 'trailing space ', 'trailing two  ',
  'a  b   c    d', ' ', '  ', '\n', 'line one\nline two\n', '\n\nblank lines\n\n',
  '\ttab\tseparated', 'mixed \t \n whitespace', 'x', 'xyz', 'QQQ', 'zzzz zzzz',
  '0123456789', 'counted 12 boats and 7 more', '3.14159 2.71828', '1,000,000',
  'café crème brûlée', 'naïve résumé', 'Über schön grün', 'mañana señor',
  'Привет мир', 'Ελληνικά', 'עברית', 'العربية', 'हिन्दी', '中文', '日本語のテキスト', '한국어',
  '中文 and 日本', '😀', '👍🏽 thumbs', '👨‍👩‍👧 family', '🇯🇵🇫🇷', 'e\u0301 decomposed',
  '\u00a0nbsp\u2003em', '\u3000ideographic space', 'zero\u200bwidth',
  '<s>', '</s>', '<unk>', '<s>The robot', 'The robot</s>', 'a</s>b', 'a </s> b', '</s> lead',
  '<s><s>', '<s> <s>', '<s>  two', 'x<s', '<s >', '< s>', '<s>\n', 'end</s>',
  'def count_boats(harbour):\n    total = 0\n    return total\n',
  '    indented four', '        indented eight', 'if boat.is_out():', 'total += 1',
  "It's a good day, isn't it?", "We'll see, they'd say", '"Good morning," said the captain.',
  'ALL CAPS ROBOT', 'robotrobotrobot', 'the the the the', 'harbourharbour',
  'a'.repeat(40), ' '.repeat(17), 'x '.repeat(20), '\u00e9'.repeat(30), '😀'.repeat(5),
  'The captain laughed and gave the robot a small shell, which it kept in a box under the stairs.',
  '~!@#$%^&*()_+{}|:<>?`-=[]\\;\',./', '\u007f\u0001\u001b[0m',
  'jqk', 'jqk jqk', 'ajqkb', 'jq', 'qk', 'jjqqkk',
];

const llamaParts = ['the', 'robot', 'The', 'harbour', 'boats', 'a', 'in', 'and', 'sea', 'town',
  ' ', '  ', '   ', '\n', '\t', ',', '.', '?', '!', '"', "'", '0', '1', '42', '2024', 'é', 'ü',
  'ñ', '中', '文', '本', '字', '😀', '🙂', 'я', 'Ω', '<s>', '</s>', '<unk>', 'x', 'Q', 'café',
  '\u2003', 'ing', 'ed', 'morning', 'captain', 'count', '(', ')', ':', '_', 'jqk', 'q'];

const digitTexts = [
  'abc123', '123', '1', ' 1', '  12', '12 ', 'x1y2z3', 'x12 3.5', '3.14159', '1,000,000',
  'version 2.0.1', 'v1.2.3-rc4', '0x1F', '1e-7', '-42', '+7', '100%', '$19.99', '2024-06-01',
  '12:30:45', 'a 1 b 2 c', '1 2 3', '123abc456', 'route66', 'The 3 boats', 'count 12 boats',
  "it's 5 o'clock", "'12", "12's", '١٢٣ arabic', '۴۵۶ persian', '१२३ devanagari',
  '½ ¼ ¾', '² ³ ¹', 'Ⅻ Ⅳ ⅷ', '①②③', '〇一二', '𝟙𝟚𝟛', '\u0661\u0662x', 'x\u00b2',
  'for i in range(10):\n    total += i * 2\n', 'a[0] = b[12] + c[345]', 'f(1, 22, 333)',
  '   42   ', '\n1\n2\n', '\t7\t', '1\u00a02', '1\u30002', 'x<|endoftext|>12', '<fim_prefix>1<fim_middle>2',
  'Hello world', ' leading', 'trailing ', "don't 7's", 'robot walked', '😀1😀', '中文12中文',
  '99 bottles of beer', 'ABC123def456GHI', '0000', '00 00', 'x1', ' x1', 'xx1x',
];

const digitParts = ['1', '2', '12', '3', '0', '00', '42', '٣', '½', '²', 'Ⅻ', ' ', '  ', '\n', 'x',
  'robot', 'the', ' the', '.', ',', "'", "'s", '-', '+', 'é', '中', '😀', 'abc', 'v', '\t',
  '<|endoftext|>', '(', ')', '=', '_', 'Q'];

const llama3Texts = [
  "it's", "IT'S", "we'RE", "they'Ve", "I'M", "you'LL", "he'D", "'s", "'S", "'sun", "'Tis",
  "'re'll'd", "x'll", "'\u017f", "'\u017ft", "don't", "' s", "''s", "'", "a'",
  'Hello world', '(hello)', '[x]', '"quoted"', '\tword', '\ttab\tseparated', ' word', '  word',
  '   three', 'word ', 'word  ', '\nword', '\n\nword', 'a\nb', 'a\r\nb', 'a\rb', 'x\n  y',
  '  \n  x', ' \n \n x', '\n ', ' \n', '!!\n\nnext', ' !!\n', '..\r\n\r\nz', '?\n', ' ?',
  '1', '12', '123', '1234', '1234567', '12 345', ' 42', 'x1234y', '3.14159', '1,000,000',
  '١٢٣٤', '½¼¾', '²³', 'Ⅻⅻ', '①②③④', '2024-06-01T12:30:45Z',
  'qqq', ' qqq', 'qqqq', 'qqq qqq', '<|begin_of_text|>Hello', 'a<|end_of_text|>b', '<|begin_of_text',
  'café', 'naïve résumé', 'Über', '中文 日本語', 'Привет', 'مرحبا', '😀👍🏽', '👨‍👩‍👧',
  'def f(x):\n    return x * 2\n', '    indented', 'if (a) {\n\tb();\n}\n', 'a\u00a0b',
  'x\u3000y', 'e\u0301', '$19.99!', '#hashtag @user', 'https://example.com/a?b=c',
  'The robot counted 12 boats; the captain said "Twelve?"', '   ', '\t\t', '\r\n', '\n\n\n',
];

const qwen2Extra = [
  'e\u0301', 'cafe\u0301 12345', 'A\u030a 2024', '\u1100\u1161\u11a8 \uac01', 'q\u0307\u0323',
  '<|im_start|>user\n1+1=?<|im_end|>\n<|im_start|>assistant\n2<|im_end|>', '<|endoftext|>99',
  '\u212b\u2126 \u0958', '1\u0301 2\u0308', 'x\u0301\u0301\u0301 123456789',
];

const llama3Parts = ["'s", "'S", "'re", "'LL", "'", 'the', 'The', 'robot', 'qqq', ' ', '  ',
  '\n', '\r\n', '\t', '1', '23', '4567', '٣', '(', ')', '!', '?', '.', ',', 'é', '中', '😀',
  '<|begin_of_text|>', '\u00a0', 'x', 'Q', '_', '-', '=', ' the', ' 1'];

let state = 2463534242;
function rand(n) {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state % n;
}
function randomTexts(parts, count) {
  const out = [];
  for (let i = 0; i < count; i++) {
    let s = '';
    const len = 1 + rand(12);
    for (let j = 0; j < len; j++) s += parts[rand(parts.length)];
    out.push(s);
  }
  return out;
}

const esc = s => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r');
(async () => {
  const mode = process.argv[2], tok = Tokenizer.fromFile(process.argv[3]);
  const texts = mode === 'digits' ? digitTexts.concat(randomTexts(digitParts, 60))
              : mode.startsWith('llama3') ? llama3Texts.concat(randomTexts(llama3Parts, 80))
              : mode.startsWith('qwen2') ? llama3Texts.concat(qwen2Extra, randomTexts(llama3Parts.concat(
                  ['e\u0301', '\u00e9', '<|im_start|>', '\u212b']), 80))
                                  : llamaTexts.concat(randomTexts(llamaParts, 100));
  for (const t of texts) {
    if (mode === 'llama3-pretok' || mode === 'qwen2-pretok') { // byte length of each pre-token (one code point per byte)
      const lens = tok.getPreTokenizer().preTokenizeString(t).map(([p]) => [...p].length);
      process.stdout.write(esc(t) + ' => ' + lens.join(',') + '\n');
      continue;
    }
    const ids = (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
    if (mode === 'llama-decode') {
      const text = await tok.decode(ids, false);
      process.stdout.write(ids.join(',') + ' => ' + Buffer.from(text, 'utf8').toString('hex') + '\n');
    } else {
      process.stdout.write(esc(t) + ' => ' + ids.join(',') + '\n');
    }
  }
})();
