"""The one progress bar: library code reports ``on_progress(done, total)``; only the command line draws."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from core import OnProgress

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(description: str, *, min_total: int = 1) -> Iterator[OnProgress]:
    """A rich bar on stderr, driven by the ``(done, total)`` calls of the callback it yields.

    Silent when stderr is not a terminal, and for jobs whose total is below ``min_total`` (a bar that
    would only flash). A total of 0 (unknown) draws a bar without an end. Nothing is drawn before the
    first call, so work that reports nothing (e.g. loaded from a cache) leaves no trace.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    bar = Progress(*columns, console=console, disable=not console.is_terminal)
    task: TaskID | None = None

    def on_progress(done: int, total: int) -> None:
        nonlocal task
        if 0 < total < min_total:
            return
        if task is None:
            bar.start()
            task = bar.add_task(description, total=total or None)
        bar.update(task, completed=done, total=total or None)

    try:
        yield on_progress
    finally:
        if task is not None:
            bar.stop()
