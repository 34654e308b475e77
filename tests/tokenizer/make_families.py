#!/usr/bin/env python3
"""Writes tests/tokenizer/families/*.json: small synthetic HF tokenizer.json files with the real
families' normalizer / pre_tokenizer / added_tokens / post_processor blocks (Qwen2, Llama 3,
GPT-2, SmolLM byte-level BPE; Phi-3, Gemma, Mistral SentencePiece-style BPE), over vocabularies
and merges trained here on tests/tokenizer/{sample,families}.txt. tests/tokenizer/oracle.mjs
encodes with them through @huggingface/tokenizers; tests/tokenizer_test.cpp compares Radix's ids.
Deterministic: run it again after changing the texts or the blocks, and commit its output.
  python3 tests/tokenizer/make_families.py
"""
import collections
import json
import pathlib

import regex

HERE = pathlib.Path(__file__).resolve().parent
# The training text, without the special tokens' spellings (no merge forms them, as in real vocabularies).
TEXT = regex.sub(r"<\|[a-z_]+\|>|</?s>|<bos>|<eos>|<(start|end)_of_turn>|\[/?INST\]|</?tool_call>", " ",
                 (HERE / "sample.txt").read_text(encoding="utf-8") + (HERE / "families.txt").read_text(encoding="utf-8"))

# The Split regexes of the real tokenizer.json files.
QWEN2_RE = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
LLAMA3_RE = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
SPACE = "\u2581"


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def train(words, merges_wanted):
    """BPE merges by pair frequency (ties: the smallest pair), over words given as symbol tuples."""
    counts = collections.Counter(words)
    words = {w: c for w, c in counts.items()}
    merges = []
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        if pairs[best] < 2:
            break
        merges.append(best)
        joined = best[0] + best[1]
        updated = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            updated[tuple(out)] = updated.get(tuple(out), 0) + c
        words = updated
    return merges


def byte_level_model():
    table = bytes_to_unicode()
    words = [tuple(table[b] for b in piece.encode("utf-8")) for piece in regex.findall(GPT2_RE, TEXT)]
    merges = train(words, 400)
    vocab = {table[b]: i for i, b in enumerate(sorted(table))}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return vocab, [f"{a} {b}" for a, b in merges]


def sentencepiece_model(specials):
    chars = sorted(set(TEXT.replace(" ", SPACE)) - {"\n"})
    words = []
    for line in TEXT.split("\n"):
        text = SPACE + line.replace(" ", SPACE)
        for word in regex.findall(SPACE + "+[^" + SPACE + "]*|[^" + SPACE + "]+", text):
            words.append(tuple(word))
    merges = train(words, 300)
    vocab = {}
    for s in specials:
        vocab[s] = len(vocab)
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for c in chars:
        vocab.setdefault(c, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return vocab, [f"{a} {b}" for a, b in merges]


def added(id_, content, special=True, lstrip=False, rstrip=False, normalized=None, single_word=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": (not special) if normalized is None else normalized, "special": special}


def byte_level(name, normalizer, pre_tokenizer, extra, post_processor=None, ignore_merges=False, vocab_added=()):
    vocab, merges = byte_level_model()
    tokens = []
    for content, flags in extra:
        vocab.setdefault(content, len(vocab))
        tokens.append(added(vocab[content], content, **flags))
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": tokens,
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor or {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges, "vocab": vocab, "merges": merges},
    }


def split_then_bytes(pattern):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}


def sentencepiece(specials, extra, normalizer, pre_tokenizer, bos):
    vocab, merges = sentencepiece_model(specials)
    tokens = [added(vocab[s], s, normalized=False) for s in specials]
    for content, flags in extra:
        vocab.setdefault(content, len(vocab))
        tokens.append(added(vocab[content], content, **flags))
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": tokens,
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {bos: {"id": bos, "ids": [vocab[bos]], "tokens": [bos]}}},
        "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
                                                     {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False, "vocab": vocab, "merges": merges},
    }


S = {"normalized": False}
LLAMA2_NORMALIZER = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SPACE},
                                                         {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]}
FAMILIES = {
    # Qwen2 / Qwen2.5: NFC, its Split regex (single digits), ByteLevel without regex; <tool_call> is not special.
    "qwen2": byte_level("qwen2", {"type": "NFC"}, split_then_bytes(QWEN2_RE),
                        [("<|endoftext|>", S), ("<|im_start|>", S), ("<|im_end|>", S),
                         ("<tool_call>", {"special": False, "normalized": False}),
                         ("</tool_call>", {"special": False, "normalized": False})]),
    # Llama 3: digits in threes, ignore_merges, BOS from the TemplateProcessing post-processor.
    "llama3": byte_level("llama3", None, split_then_bytes(LLAMA3_RE),
                         [("<|begin_of_text|>", S), ("<|end_of_text|>", S), ("<|start_header_id|>", S),
                          ("<|end_header_id|>", S), ("<|eot_id|>", S)],
                         post_processor={"type": "Sequence", "processors": [
                             {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                             {"type": "TemplateProcessing",
                              "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                              "pair": [], "special_tokens": {}}]},
                         ignore_merges=True),
    # GPT-2: ByteLevel with its own regex; <|endoftext|> normalized (as on the HF hub).
    "gpt2": byte_level("gpt2", None, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
                       [("<|endoftext|>", {"normalized": True})]),
    # SmolLM: Digits (individual) then ByteLevel with its regex.
    "smollm": byte_level("smollm", None, {"type": "Sequence", "pretokenizers": [
                             {"type": "Digits", "individual_digits": True},
                             {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
                         [("<|endoftext|>", S), ("<|im_start|>", S), ("<|im_end|>", S)]),
    # Phi-3: Llama 2's Prepend + Replace normalizers; chat tokens swallow the whitespace after them.
    "phi3": sentencepiece(["<unk>", "<s>", "</s>"],
                          [("<|endoftext|>", S), ("<|assistant|>", {"rstrip": True, "normalized": False}),
                           ("<|end|>", {"rstrip": True, "normalized": False}), ("<|user|>", {"rstrip": True, "normalized": False})],
                          LLAMA2_NORMALIZER, None, "<s>"),
    # Gemma: Replace only (no dummy prefix), <bos> first.
    "gemma": sentencepiece(["<pad>", "<eos>", "<bos>", "<unk>"], [("<start_of_turn>", S), ("<end_of_turn>", S)],
                           {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}, None, "<bos>"),
    # Mistral (transformers' non-legacy conversion): Metaspace, prepend_scheme first, no split.
    "mistral": sentencepiece(["<unk>", "<s>", "</s>"], [("[INST]", S), ("[/INST]", S)], None,
                             {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first", "split": False}, "<s>"),
}

if __name__ == "__main__":
    out = HERE / "families"
    out.mkdir(exist_ok=True)
    for name, tokenizer in FAMILIES.items():
        (out / f"{name}.json").write_text(json.dumps(tokenizer, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {len(FAMILIES)} tokenizer.json files into {out}")
