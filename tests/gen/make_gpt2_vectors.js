// make_gpt2_vectors.js - golden GPT-2 token ids from an independent encoder (the npm package
// gpt-3-encoder@1.1.4, a JavaScript port of OpenAI's encoder.py with the same vocabulary).
//
//   mkdir -p /tmp/npmenc && cd /tmp/npmenc && npm install gpt-3-encoder@1.1.4
//   NODE_PATH=/tmp/npmenc/node_modules node tests/gen/make_gpt2_vectors.js > tests/data/tokenizer/gpt2_extra.txt
//
// Output: one case per line, "text => id,id,...", where the text escapes backslash as \\,
// newline as \n, tab as \t and carriage return as \r (so every case is one line).
// The texts avoid what this encoder does differently from Hugging Face tokenizers: JavaScript's
// \s includes U+FEFF and excludes U+0085, its \p{..} tables follow Node's (newer) Unicode, and
// it does not treat <|endoftext|> as a special token.
'use strict';
const { encode } = require('gpt-3-encoder');

const texts = [
  'Hello world, this is a test.',
  'def main():\n    print("hi")\n\n\treturn 0\n',
  'if (x) {\n        y = 1;\n    }\n',
  'for i in range(10):\n\tif i % 2 == 0:\n\t\tcontinue\n',
  '    leading spaces',
  'trailing spaces    ',
  'a  b   c    d     e',
  'line one\nline two\r\nline three\n\n\n',
  ' \n \n  \n',
  '\t\t\tx',
  '   ',
  ' ',
  '\n',
  "I'm sure you'll see they've done it, we'd go, she's here, don't",
  "'s 't 're 've 'm 'll 'd",
  "THEY'RE WE'VE I'LL",
  "rock'n'roll o'clock ''quoted''",
  '1234567890 3.14159 -42 +7 1e10 0x1F 1,000,000',
  'Version 2.0.1-beta+build.5',
  'https://example.com/path?query=1&b=two#frag',
  'mailto:someone@example.org, ftp://files.example.net/pub/',
  'C:\\Users\\name\\file.txt',
  'emoji: 😀😃😄 👍🏽 🇫🇷 👨‍👩‍👧‍👦 ❤️',
  '日本語のテキストと中文文本和한국어 텍스트',
  '漢字かなカナ、句読点。「括弧」',
  'Ελληνικά και русский текст и עברית ועברית',
  'العربية نص مع أرقام ١٢٣٤',
  'हिन्दी पाठ और தமிழ் உரை',
  'e\u0301 a\u0300\u0316 n\u0303o combining marks',
  'café naïve résumé coöperate Ångström',
  'Zalgo: Z\u0351\u036b\u0343a\u0350l\u0357g\u034fo\u0358',
  '½ ¾ ² ³ ⅓ Ⅻ ① ⑩',
  '\u00a0non-breaking\u00a0space and\u2003em\u2009thin\u3000ideographic',
  'mixed\u2028line\u2029separators',
  '!!!??? ... --- *** ### $$$ %%% ^^^ &&& ((( )))',
  '<html><body class="main">Text &amp; more</body></html>',
  '{"key": [1, 2, {"nested": null}], "s": "x\\ny"}',
  'SELECT * FROM users WHERE id = 42 AND name LIKE \'%bob%\';',
  '#include <stdio.h>\nint main(void) { return printf("%d\\n", 1); }',
  'camelCaseIdentifier snake_case_identifier SCREAMING_CASE kebab-case',
  'x += 1; y -= 2; z *= 3; w /= 4; a ** b // c',
  '=>->::<<>>!==<=',
  'The quick brown fox jumps over the lazy dog. '.repeat(5),
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'x'.repeat(1024),
  ' ' + 'y'.repeat(1023),
  '='.repeat(200),
  ' '.repeat(100) + 'end',
  '\n'.repeat(50),
  '123456789012345678901234567890',
  'Numbers۱۲۳ and ٤٥٦ and ௧௨௩',
  'tab\tseparated\tvalues\t1\t2',
  'ALLCAPS and lowercase and MiXeD',
  'Ünïcödé ÜBER straße STRASSE',
  'ﬁ ﬂ ligatures and Ａｂｃ fullwidth',
  '🤖 robots 🦾 and 🧠',
  'price: $19.99, €20, £15, ¥1000',
  'a\u200bb zero\u200cwidth\u200djoiners',
  'end with newline\n',
  'Mr. Smith\'s dog—a "good boy"—barked… twice.',
  '“Smart quotes” and ‘single ones’',
  '    def f(self):\n        return self.x  # comment\n',
  '- item one\n- item two\n  - nested\n',
  '| col | col2 |\n|-----|------|\n| 1   | 2    |',
  '2024-01-15T10:30:00Z',
  'user@host:~$ ls -la /tmp',
  'ǅ ǈ ǋ titlecase letters',
  'Ⅰ Ⅱ Ⅲ roman numerals and 〇 〡',
];

const esc = s => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r');
for (const t of texts) {
  process.stdout.write(esc(t) + ' => ' + encode(t).join(',') + '\n');
}
