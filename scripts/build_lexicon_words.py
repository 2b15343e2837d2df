"""Rebuild ``retrieval/corpus/lexicon/words.tsv``: words seen at least twice in the bundled corpus.

    python scripts/build_lexicon_words.py

The spelling corrector of the deterministic rewriter only corrects towards these words.
"""

from __future__ import annotations

import sys

from retrieval.ncbi import load_corpus
from retrieval.vocab import LEXICON_DIR, build_word_counts


def main() -> None:
    corpus = load_corpus()
    texts = (" ".join([r.title, *(s.text for s in r.abstract)]) for r in corpus.records.values())
    pairs = build_word_counts(texts)
    target = LEXICON_DIR / "words.tsv"
    header = (
        "# word<TAB>count: words seen >= 2 times in the bundled corpus (scripts/build_lexicon_words.py)\n"
    )
    target.write_text(header + "".join(f"{w}\t{c}\n" for w, c in pairs), encoding="utf-8")
    print(f"wrote {len(pairs)} words to {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
