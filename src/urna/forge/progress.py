"""Build progress on stderr: one rich bar per stage on a terminal, nothing in a pipe."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Advance = Callable[..., None]  # advance(n: int, doing: str | None = None)


def _silent(n: int, doing: str | None = None) -> None:
    """Nothing to draw (not a terminal)."""


class Progress:
    """Per-stage progress (read, embed, index, write): rich bars on a terminal, else silent."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    @contextmanager
    def stage(self, name: str, total: int | None = 1) -> Iterator[Advance]:
        """Context yielding ``advance(n, doing=None)`` for one stage of ``total`` units.

        ``total`` None is an unknown length; ``doing`` names the part now under way.
        """
        if not self.enabled:
            yield _silent
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        # a finished stage's bar stays on screen: the four bars are the build's record
        with RichProgress(TextColumn("[bold]{task.description:<14}"), BarColumn(),
                          MofNCompleteColumn(), TimeElapsedColumn(),
                          console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task(name, total=total)

            def advance(n: int, doing: str | None = None) -> None:
                bar.update(task, advance=n, description=f"{name}: {doing}" if doing else name)

            yield advance
            if total is None:
                bar.update(task, total=1, completed=1)
            bar.update(task, description=name)

    def note(self, message: str) -> None:
        """One line on stderr, shown whether or not the bars are (a slow step's reason)."""
        print(message, file=sys.stderr, flush=True)
