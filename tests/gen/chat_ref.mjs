// Renders a chat template with @huggingface/jinja (Hugging Face's JavaScript Jinja), with the
// variables transformers passes (messages, tools=null, documents=null, add_generation_prompt,
// bos_token, eos_token, more from --vars), "now" fixed by --date for its strftime_now.
// usage: node chat_ref.mjs TEMPLATE MESSAGES.json [--vars F] [--bos S] [--eos S]
//                          [--date YYYY-MM-DD] [--no-generation-prompt]
// Prints the prompt; on an error "ERROR: <message>" and exit 1.
// Finds the package through NODE_PATH (npm install @huggingface/jinja outside the repo).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Template } = require("@huggingface/jinja");

// strftime_now is the package's own (it reads new Date()): --date fixes what "now" is.
function fixNow(y, m, d) {
  const RealDate = Date;
  globalThis.Date = class extends RealDate {
    constructor(...a) { if (a.length) super(...a); else super(y, m - 1, d); }
    static now() { return new RealDate(y, m - 1, d).getTime(); }
  };
}

const args = process.argv.slice(2);
const vars = {};
let genPrompt = true;
for (let i = 2; i < args.length; i++) {
  if (args[i] === "--vars") Object.assign(vars, JSON.parse(readFileSync(args[++i], "utf8")));
  else if (args[i] === "--bos") vars.bos_token = args[++i];
  else if (args[i] === "--eos") vars.eos_token = args[++i];
  else if (args[i] === "--date") {
    const [y, m, d] = args[++i].split("-").map(Number);
    fixNow(y, m, d);
  } else if (args[i] === "--no-generation-prompt") genPrompt = false;
  else { console.error(`chat_ref.mjs: bad argument ${args[i]}`); process.exit(2); }
}
const source = readFileSync(args[0], "utf8");
const messages = JSON.parse(readFileSync(args[1], "utf8"));
try {
  const out = new Template(source).render({ messages, tools: null, documents: null,
    add_generation_prompt: genPrompt, ...vars });
  process.stdout.write(out);
} catch (e) {
  process.stdout.write(`ERROR: ${e.message}`);
  process.exitCode = 1;
}
