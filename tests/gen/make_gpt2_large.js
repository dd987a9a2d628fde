// make_gpt2_large.js - one large varied text and its GPT-2 token ids from two encoders that are
// independent of tfm.h: the npm package gpt-3-encoder@1.1.4 (a port of OpenAI's encoder.py) and
// Hugging Face tokenizers (npm tokenizers@0.23.2). The ids are written only if both agree.
//
//   NODE_PATH=/tmp/npmenc/node_modules:/tmp/npmhf/node_modules \
//     node tests/gen/make_gpt2_large.js TEXT_FILE /work/shared/tokenizers/gpt2 > IDS_FILE
//
// Output: the ids, comma separated, on one line. Both encoders run without special tokens, so
// the text must not contain <|endoftext|> (tfm.h's GPT-2 blob matches it as a special token).
'use strict';
const fs = require('fs');
const path = require('path');
const { encode } = require('gpt-3-encoder');
const { Tokenizer, BPE, byteLevelPreTokenizer } = require('tokenizers');

async function main() {
  const [textFile, gpt2Dir] = process.argv.slice(2);
  const text = fs.readFileSync(textFile, 'utf8');
  const a = encode(text);
  const tok = new Tokenizer(await BPE.fromFile(path.join(gpt2Dir, 'vocab.json'),
                                               path.join(gpt2Dir, 'merges.txt')));
  tok.setPreTokenizer(byteLevelPreTokenizer(false, true));
  const b = (await tok.encode(text)).getIds();
  if (a.length !== b.length || a.some((x, i) => x !== b[i])) {
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    console.error(`the two encoders differ at id ${i}: ${a.slice(i, i + 5)} vs ${b.slice(i, i + 5)}`);
    process.exit(1);
  }
  process.stdout.write(a.join(',') + '\n');
  console.error(`${text.length} characters, ${a.length} ids, both encoders agree`);
}
main().catch((e) => { console.error(e); process.exit(1); });
