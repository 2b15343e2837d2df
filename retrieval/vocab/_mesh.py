"""A small MeSH vocabulary: the Neoplasms [C04] tree plus descriptor names seen in the corpus.

It drives two things in the search engine:

* **Automatic Term Mapping** (``lookup``): an untagged term or phrase is mapped to a descriptor through the
  descriptor names (2025 and 2019), the hand-curated ATM synonyms (``corpus/mesh/atm_synonyms.tsv``), the
  2019 preferred-concept entry terms and any descriptor names registered from the corpus.
* **Explosion** (``descendants``): ``[MeSH Terms]`` searches include every descriptor indented under the
  searched one. Only the C04 tree is known, so descriptors outside it explode to nothing but themselves.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MESH_DIR", "MeshDescriptor", "MeshVocabulary"]

MESH_DIR = Path(__file__).resolve().parents[1] / "corpus" / "mesh"
_C04_FILE = "mesh_c04_neoplasms.json"
_SYNONYM_FILE = "atm_synonyms.tsv"


def _key(term: str) -> str:
    """Case- and whitespace-insensitive lookup key."""
    return " ".join(term.lower().split())


@dataclass(frozen=True, slots=True)
class MeshDescriptor:
    name: str
    ui: str | None = None
    tree_numbers: tuple[str, ...] = ()
    name_2019: str | None = None
    entry_terms: tuple[str, ...] = ()


@functools.lru_cache(maxsize=4)
def _read_json(path: str) -> tuple[MeshDescriptor, ...]:
    # Parsed once per process; every MeshVocabulary gets its own mutable maps on top of these frozen records.
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    out: list[MeshDescriptor] = []
    for d in raw["descriptors"]:
        out.append(
            MeshDescriptor(
                name=d["name"],
                ui=d.get("ui"),
                # tree_numbers: a world's full-MeSH file (retrieval.world), same shape otherwise
                tree_numbers=tuple(d.get("tree_numbers_2025") or d.get("tree_numbers") or ()),
                name_2019=d.get("name_2019"),
                entry_terms=tuple(d.get("entry_terms_preferred_concept_2019") or ()),
            )
        )
    return tuple(out)


@functools.lru_cache(maxsize=4)
def _read_synonyms(path: str) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        term, _, name = line.partition("\t")
        if term.strip() and name.strip():
            pairs.append((term.strip(), name.strip()))
    return tuple(pairs)


class MeshVocabulary:
    """Descriptor lookup and tree explosion. Mutable only through :meth:`add_descriptors`."""

    def __init__(
        self, descriptors: Iterable[MeshDescriptor] = (), synonyms: Iterable[tuple[str, str]] = ()
    ) -> None:
        self._descriptors: dict[str, MeshDescriptor] = {}  # key(name) -> descriptor
        self._names: dict[str, str] = {}  # key(name or 2019 name) -> canonical name
        self._terms: dict[str, str] = {}  # key(synonym or entry term) -> canonical name
        self._by_tree: dict[str, str] = {}  # tree number -> canonical name
        self._desc_cache: dict[str, frozenset[str]] = {}
        self._max_words = 1
        descs = list(descriptors)
        for d in descs:
            self._descriptors[_key(d.name)] = d
            self._names.setdefault(_key(d.name), d.name)
            for tn in d.tree_numbers:
                self._by_tree[tn] = d.name
        # 2019 names after all 2025 names, so a renamed descriptor never shadows a current name.
        for d in descs:
            if d.name_2019:
                self._names.setdefault(_key(d.name_2019), d.name)
        # Curated synonyms beat entry terms: they encode what PubMed's ATM really does.
        for term, name in synonyms:
            canonical = self._names.get(_key(name))
            if canonical is None:
                raise ValueError(f"ATM synonym {term!r} targets unknown descriptor {name!r}")
            self._terms.setdefault(_key(term), canonical)
        for d in descs:
            for t in d.entry_terms:
                self._terms.setdefault(_key(t), d.name)
        self._sorted_trees = sorted(self._by_tree)
        for k in (*self._names, *self._terms):
            self._max_words = max(self._max_words, len(k.split()))

    @classmethod
    def load(cls, directory: Path | None = None, extra: Iterable[Path] = ()) -> MeshVocabulary:
        """A fresh vocabulary from the bundled C04 file and ATM synonyms (files parsed once per process).

        ``extra``: more descriptor files of the same JSON shape (e.g. a world's full MeSH 2015), added
        after C04: a descriptor already known keeps its entry, and their C04 tree numbers are dropped so
        the Neoplasms tree keeps one (current) numbering.
        """
        base = directory or MESH_DIR
        descriptors = list(_read_json(str(base / _C04_FILE)))
        known = {d.ui for d in descriptors if d.ui}
        for path in extra:
            for d in _read_json(str(path)):
                if d.ui not in known:
                    trees = tuple(t for t in d.tree_numbers if not t.startswith("C04"))
                    descriptors.append(dataclasses.replace(d, tree_numbers=trees))
        return cls(descriptors, _read_synonyms(str(base / _SYNONYM_FILE)))

    def __len__(self) -> int:
        return len(set(self._names.values()))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and _key(name) in self._names

    @property
    def max_phrase_words(self) -> int:
        """Longest lookup key in words; bounds the phrase segmentation done by ATM."""
        return self._max_words

    def add_descriptors(self, names: Iterable[str]) -> None:
        """Register descriptor names (e.g. from indexed records) so ATM can map them. Known names are kept."""
        for name in names:
            k = _key(name)
            if k and k not in self._names:
                self._names[k] = name.strip()
                self._max_words = max(self._max_words, len(k.split()))

    def canonical(self, name: str) -> str | None:
        """The current descriptor name for a descriptor name or 2019 name (no entry terms)."""
        return self._names.get(_key(name))

    def lookup(self, term: str) -> str | None:
        """Descriptor name for a term: names, 2019 names, curated synonyms, entry terms (case-insensitive)."""
        k = _key(term)
        return self._names.get(k) or self._terms.get(k)

    def descriptor(self, name: str) -> MeshDescriptor | None:
        canonical = self.canonical(name)
        return self._descriptors.get(_key(canonical)) if canonical else None

    def entry_terms(self, name: str) -> tuple[str, ...]:
        """The entry terms of the descriptor ``name`` (or 2019 name); () when unknown."""
        d = self.descriptor(name)
        return d.entry_terms if d else ()

    def tree_numbers(self, name: str) -> tuple[str, ...]:
        d = self.descriptor(name)
        return d.tree_numbers if d else ()

    def descendants(self, name: str) -> frozenset[str]:
        """Canonical names of every descriptor strictly under ``name``, following each of its tree numbers."""
        canonical = self.canonical(name)
        if canonical is None:
            return frozenset()
        cached = self._desc_cache.get(canonical)
        if cached is not None:
            return cached
        out: set[str] = set()
        for tn in self.tree_numbers(canonical):
            prefix = tn + "."
            # Tree numbers sort so that a subtree is one contiguous run starting right after its prefix.
            i = bisect.bisect_left(self._sorted_trees, prefix)
            while i < len(self._sorted_trees) and self._sorted_trees[i].startswith(prefix):
                out.add(self._by_tree[self._sorted_trees[i]])
                i += 1
        out.discard(canonical)
        result = frozenset(out)
        self._desc_cache[canonical] = result
        return result

    def parents(self, name: str) -> tuple[str, ...]:
        """Canonical names of the descriptors directly above ``name`` (one per tree number), C04 only.

        Used to broaden a concept that found nothing: no glioblastoma evidence -> look at gliomas.
        """
        out: dict[str, None] = {}
        for tn in self.tree_numbers(name):
            parent_tn = tn.rpartition(".")[0]
            parent = self._by_tree.get(parent_tn) if parent_tn else None
            if parent is not None:
                out.setdefault(parent, None)
        return tuple(out)

    def names(self) -> list[str]:
        """Every canonical descriptor name known (C04 plus registered ones), sorted."""
        return sorted(set(self._names.values()))
