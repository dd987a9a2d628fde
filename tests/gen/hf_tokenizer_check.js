// hf_tokenizer_check.js - checks neox_tok's golden ids with Hugging Face tokenizers itself (the
// npm package tokenizers@0.23.2, the Rust library's Node binding):
//   mkdir -p /tmp/npmhf && cd /tmp/npmhf && npm install tokenizers@0.23.2
//   NODE_PATH=/tmp/npmhf/node_modules node tests/gen/hf_tokenizer_check.js tests/data/models/neox_tok
// Encodes DIR/text.txt with DIR/tokenizer.json and compares with DIR/tokens.txt; exit code 1 if
// they differ.
'use strict';
const { Tokenizer } = require('tokenizers');
const fs = require('fs');

const dir = process.argv[2];
const tok = Tokenizer.fromFile(dir + '/tokenizer.json');
const text = fs.readFileSync(dir + '/text.txt', 'utf8');
const want = fs.readFileSync(dir + '/tokens.txt', 'utf8').trim().split(/\s+/).map(Number);
(async () => {
  const got = (await tok.encode(text)).getIds();
  const same = JSON.stringify(got) === JSON.stringify(want);
  console.log('tokenizers: ' + got.join(' '));
  console.log('tokens.txt: ' + want.join(' '));
  console.log('decoded: ' + JSON.stringify(await tok.decode(got, false)));
  console.log(same ? 'MATCH' : 'DIFFER');
  process.exit(same ? 0 : 1);
})();
