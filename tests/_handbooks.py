"""A shared test world: five hospital handbooks on travel after a kidney transplant as collections, a
bag-of-words encoder, node settings and a scripted LLM that answers from the context it is given.

Northbridge says 3 months, Riverside 6, Lakeshore 12, Hillcrest is silent (the synthetic handbooks in
tests/fixtures/handbooks), Eastgate (written here) agrees with Northbridge.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pydantic import SecretStr

from app.judge import NOT_ADDRESSED
from app.settings import FederationSettings, NodeSettings, PeerSettings, Settings
from retrieval.collections import (
    CollectionMeta,
    CollectionSearchSettings,
    CollectionSettings,
    CollectionStore,
)
from tests._fakes import Reply, ScriptedLLM, VectorEncoder
from tests.fixtures.handbooks.make_pdf import build_handbooks

EASTGATE = """# Eastgate Clinic: after your kidney transplant

## Medicines
Take your anti-rejection medicines at the same times every day and never stop them on your own.

## Travel abroad
Please do not travel abroad for the first 3 months after your transplant, while your medicines and blood
tests change often. After three months, trips abroad are fine once your kidney function is stable.

## Diet
Avoid grapefruit, which changes the levels of tacrolimus in your blood.
"""

INSTITUTIONS = {
    "northbridge": "Northbridge Hospital",
    "riverside": "Riverside Medical Center",
    "lakeshore": "Lakeshore Transplant Institute",
    "hillcrest": "Hillcrest University Hospital",
    "eastgate": "Eastgate Clinic",
}
ORDER = list(INSTITUTIONS)


class BowEncoder(VectorEncoder):
    """Bag-of-words hashing encoder: lexical overlap as cosine. Deterministic, no model download."""

    name = "test:bow"
    dim = 512
    query_max_length = 64
    doc_max_length = 512

    def _vec(self, text: str) -> npt.NDArray[np.float32]:
        v = np.zeros(self.dim, np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            v[int.from_bytes(hashlib.sha1(word.encode()).digest()[:4], "little") % self.dim] += 1.0
        norm = float(np.linalg.norm(v))
        return v / norm if norm else v


def build_store(root: Path, names: Sequence[str] = ORDER, *, private: Sequence[str] = ()) -> CollectionStore:
    """One collection per handbook (A-D from H8's fixtures, plus Eastgate), ready to search."""
    src = root.parent / f"{root.name}-src"
    files = build_handbooks(src)
    (src / "eastgate.md").write_text(EASTGATE)
    files["eastgate"] = src / "eastgate.md"
    store = CollectionStore(root)
    for name in names:
        meta = CollectionMeta(
            name=name,
            institution=INSTITUTIONS[name],
            topic="transplant",
            care_phase="after discharge",
            private=name in private,
        )
        report = store.add(name, [files[name]], meta, attributes={"audience": "patients"})
        assert not report.failed, report.failed
    return store


def node_settings(root: Path, **update: Any) -> Settings:
    search = CollectionSearchSettings(whole_doc_max_chars=1500, weak_score_bi_encoder=0.0)
    base = Settings(collections=CollectionSettings(root=root, search=search), **update).offline()
    return base


def months(text: str) -> str | None:
    m = re.search(r"\b(3|6|12)\s+months\b", text)
    return m.group(1) if m else None


def handbook_llm() -> ScriptedLLM:
    """Answers from the context it is given, absence check NO, comparison by the months each answer names."""

    def script(prompt: str) -> Reply:
        if "Does this response indicate" in prompt:
            return "NO"
        if "ABSENT / CONSISTENT / COMPLEMENTARY / DIVERGENT / CONTRADICTORY" in prompt:
            a = re.search(r"Answer A \(.*?\): (.*)", prompt)
            b = re.search(r"Answer B \(.*?\): (.*)", prompt)
            assert a and b
            same = months(a.group(1)) == months(b.group(1))
            return {
                "classification": "CONSISTENT" if same else "DIVERGENT",
                "reasoning": "compared the waiting times",
                "divergence_topic": None if same else "how long to wait before travelling abroad",
                "clinical_significance": None if same else "medium",
            }
        context, question = prompt.split("## Patient Question")
        if "travel" not in context.lower() or "travel" not in question.lower():
            return NOT_ADDRESSED
        for n in ("12", "6", "3"):
            if re.search(rf"\b{n} months\b", context):
                return f"Wait {n} months before travelling abroad (section: Travel)."
        return "The handbook discusses travel without a waiting time."

    return ScriptedLLM(script)


# --- federation: node keys and settings ----------------------------------------------------------------


@cache
def node_key(node_id: str) -> tuple[str, str]:
    """(private PEM, public PEM) of a node's assertion signing key (EC P-256), one per name per session."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def federation(
    *nodes: NodeSettings, node_id: str = "a", peers: Sequence[str] = (), **update: Any
) -> FederationSettings:
    """Node ``node_id``'s federation: it asks ``nodes`` (signing with its key) and accepts the assertions
    of ``peers`` (with their keys)."""
    return FederationSettings(
        nodes=list(nodes),
        node_id=node_id,
        signing_key=SecretStr(node_key(node_id)[0]),
        peers=[PeerSettings(name=p, public_key=node_key(p)[1], issuers=["*"]) for p in peers],
        **update,
    )
