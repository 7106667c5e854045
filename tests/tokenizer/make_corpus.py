#!/usr/bin/env python3
"""Builds the tokenizer test corpus deterministically: JSON lines {"text": ...}, one document each.

usage: make_corpus.py OUT.jsonl [--mb 4] [--seed 1] [--repo DIR]

Sources (nothing is downloaded): prose from /usr/share/doc (plain text files and copyright
notices), man pages from /usr/share/man (gzipped troff, a mix of prose and markup), source code of
this repository, and generated text: Chinese and Japanese, emoji (with skin tones, ZWJ sequences
and flags), long digit runs, whitespace runs, and odd Unicode (combining marks, decomposed Hangul,
RTL with direction marks, zero-width characters, variation selectors, astral letters). The
generated characters come from blocks assigned long ago, so every Unicode library agrees on them.
The same arguments give the same file on every machine that has the same /usr/share files; the
repository and generated parts alone are identical everywhere.
"""
import argparse, gzip, json, os, random, sys

def read_text(path, limit):
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            data = f.read(limit)
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError):
        return None

def files_under(root, suffixes, rng, count):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(suffixes):
                found.append(os.path.join(dirpath, name))
    rng.shuffle(found)
    return found[:count]

CJK = (0x4E00, 0x9FA5)
HIRAGANA = (0x3041, 0x3096)
KATAKANA = (0x30A1, 0x30FA)
HANGUL = (0xAC00, 0xD7A3)
EMOJI = [0x1F600 + i for i in range(0x50)] + [0x1F300 + i for i in range(0x100)] + [0x2600 + i for i in range(0x80)]
SKIN = [0x1F3FB, 0x1F3FC, 0x1F3FD, 0x1F3FE, 0x1F3FF]
ZWJ_SEQUENCES = ["\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466", "\U0001F3F3\uFE0F\u200D\U0001F308",
                 "\U0001F469\U0001F3FD\u200D\U0001F4BB", "\u2764\uFE0F\u200D\U0001F525", "\U0001F1EF\U0001F1F5",
                 "\U0001F1FA\U0001F1F8", "1\uFE0F\u20E3", "\U0001F441\uFE0F\u200D\U0001F5E8\uFE0F"]
COMBINING = [chr(c) for c in range(0x0300, 0x036F)]
ODD = ["\u200B", "\u200C", "\u200D", "\u2060", "\uFEFF", "\u200E", "\u200F", "\u202A", "\u202B", "\u202C", "\u202D",
       "\u202E", "\u00AD", "\uFE0F", "\uFE0E", "\u034F", "\u0085", "\u2028", "\u2029", "\u00A0", "\u3000", "\u1680",
       "\u2007", "\u202F", "\uFFFD", "\uE000", "\uF8FF", "\U0001D400", "\U0001D7D8", "\u0000", "\u0001", "\u001F",
       "\u007F", "\u0080", "\u009F", "\u2126", "\u212B", "\uFB01", "\u1E9B\u0323", "\u0344", "\u0F73"]
ARABIC = "\u0645\u0631\u062D\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 \u0661\u0662\u0663"
HEBREW = "\u05E9\u05DC\u05D5\u05DD \u05E2\u05D5\u05DC\u05DD"
JA_PUNCT = "\u3001\u3002\u300C\u300D\uFF01\uFF1F\u30FC"
ZH_PUNCT = "\uFF0C\u3002\uFF1A\uFF1B\u201C\u201D\uFF08\uFF09"

def rand_range(rng, lo_hi, n):
    lo, hi = lo_hi
    return "".join(chr(rng.randint(lo, hi)) for _ in range(n))

def chinese(rng):
    out = []
    for _ in range(rng.randint(3, 40)):
        out.append(rand_range(rng, CJK, rng.randint(2, 12)))
        out.append(rng.choice(ZH_PUNCT + " 0123456789abc"))
    return "".join(out)

def japanese(rng):
    out = []
    for _ in range(rng.randint(3, 40)):
        r = rng.random()
        block = HIRAGANA if r < 0.5 else KATAKANA if r < 0.8 else CJK
        out.append(rand_range(rng, block, rng.randint(1, 8)))
        if rng.random() < 0.3:
            out.append(rng.choice(JA_PUNCT))
    return "".join(out)

def emoji(rng):
    out = []
    for _ in range(rng.randint(5, 60)):
        r = rng.random()
        if r < 0.5:
            out.append(chr(rng.choice(EMOJI)))
        elif r < 0.65:
            out.append(chr(rng.choice(EMOJI[:0x50])) + chr(rng.choice(SKIN)))
        elif r < 0.85:
            out.append(rng.choice(ZWJ_SEQUENCES))
        else:
            out.append(rng.choice([" ", "  ", "\n", "!", "ok ", "lol "]))
    return "".join(out)

def digits(rng):
    out = []
    for _ in range(rng.randint(1, 10)):
        out.append("".join(rng.choice("0123456789") for _ in range(rng.randint(1, 200))))
        out.append(rng.choice([" ", ",", ".", "\n", "-", "+", " = ", "\u0663\u0664", "\uFF11\uFF12", "\u00B2"]))
    return "".join(out)

def whitespace(rng):
    pieces = [" ", "  ", "    ", "\t", "\n", "\n\n", "\r\n", " \n", "\u00A0", "\u3000", "\u0085", "\u2028", "\x0b", "\x0c"]
    out = []
    for _ in range(rng.randint(5, 80)):
        out.append(rng.choice(pieces) * rng.randint(1, 30))
        if rng.random() < 0.4:
            out.append(rng.choice(["word", "x", "\u4F60\u597D", "42", "(", "}", "'s", "I'm"]))
    return "".join(out)

def odd_unicode(rng):
    out = []
    for _ in range(rng.randint(10, 80)):
        r = rng.random()
        if r < 0.25:
            out.append(rng.choice("aeiouAEIOUnNcC") + "".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 4))))
        elif r < 0.35:
            out.append("".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 3))))  # marks with no base
        elif r < 0.5:
            # Decomposed Hangul (L V T jamo) and precomposed syllables: NFC recomposes the former.
            out.append(chr(0x1100 + rng.randint(0, 18)) + chr(0x1161 + rng.randint(0, 20)) +
                       (chr(0x11A8 + rng.randint(0, 26)) if rng.random() < 0.5 else ""))
            out.append(rand_range(rng, HANGUL, rng.randint(1, 4)))
        elif r < 0.6:
            out.append(rng.choice([ARABIC, HEBREW]) + rng.choice(["\u200F", "\u200E", " "]))
        elif r < 0.85:
            out.append(rng.choice(ODD))
        else:
            out.append(rng.choice(["caf\u00E9", "cafe\u0301", "\u00C5ngstr\u00F6m", "A\u030Angstro\u0308m",
                                   "\u0915\u094D\u0937", "\u0E01\u0E34\u0E19", " ", "\n", "na\u00EFve"]))
    return "".join(out)

def mixed_chat(rng):
    turns = []
    for _ in range(rng.randint(1, 4)):
        role = rng.choice(["user", "assistant", "system"])
        body = rng.choice([chinese, japanese, emoji, digits, odd_unicode])(rng)
        turns.append(f"<|im_start|>{role}\n{body}<|im_end|>\n" if rng.random() < 0.5 else
                     f"<\uFF5CUser\uFF5C>{body}<\uFF5CAssistant\uFF5C>")
    return "".join(turns)

GENERATORS = [chinese, japanese, emoji, digits, whitespace, odd_unicode, mixed_chat]

def slice_docs(text, rng, out):
    pos = 0
    while pos < len(text):
        n = rng.randint(200, 12000)
        out.append(text[pos:pos + n])
        pos += n

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    budget = int(args.mb * 1e6)
    share = budget // 4
    docs = []

    def add_files(paths, limit):
        used = 0
        for p in paths:
            t = read_text(p, 64 * 1024)
            if t:
                slice_docs(t, rng, docs)
                used += len(t.encode("utf-8"))
            if used >= limit:
                break

    add_files(files_under("/usr/share/doc", (".txt", "copyright", ".md", "README"), rng, 400), share)  # prose
    add_files(files_under("/usr/share/man/man1", (".gz",), rng, 300), share // 2)                      # man pages
    add_files(files_under(os.path.join(args.repo, "src"), (".cpp", ".hpp"), rng, 300), share // 2)     # code
    add_files(files_under(os.path.join(args.repo, "include"), (".hpp",), rng, 100), share // 4)
    size = sum(len(d.encode("utf-8")) for d in docs)
    while size < budget:
        d = rng.choice(GENERATORS)(rng)
        docs.append(d)
        size += len(d.encode("utf-8"))
    rng.shuffle(docs)
    # A few documents that stress the limits.
    docs.append("a" * 20000)
    docs.append(" " * 20000)
    docs.append("1" * 5000)
    docs.append("\u4F60" * 5000)
    docs.append("")
    with open(args.out, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(docs)} documents, {size / 1e6:.2f} MB", file=sys.stderr)

if __name__ == "__main__":
    main()
