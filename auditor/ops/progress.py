"""Progress of the nightly steps: quiet without a terminal, a rich spinner with one."""


from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

# One console for the log lines and the progress bar, so they do not overwrite each other.
CONSOLE = Console(stderr=True)



# ---------------------------------------------------------------------------------------------
# Progress


class Steps:
    """The small progress API of a run: one task per step. This base class does nothing (cron);
    `RichSteps` draws it."""

    def add(self, description: str, total: float | None = None) -> int:
        return 0

    def advance(self, step: int, amount: float = 1.0) -> None:
        return None

    def finish(self, step: int) -> None:
        return None

    @contextlib.contextmanager
    def step(self, description: str, total: float | None = None) -> Iterator[int]:
        """A step that shows as running inside the block and finished after it."""
        task = self.add(description, total)
        try:
            yield task
        finally:
            self.finish(task)


class RichSteps(Steps):
    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def add(self, description: str, total: float | None = None) -> int:
        # total None shows a spinner (a sweep does not know its length), a number a count.
        return int(self.progress.add_task(description, total=total))

    def advance(self, step: int, amount: float = 1.0) -> None:
        self.progress.advance(TaskID(step), amount)

    def finish(self, step: int) -> None:
        task = TaskID(step)
        total = next((t.total for t in self.progress.tasks if t.id == task), None)
        # A spinner step (no total) gets one of one, so rich shows it as finished.
        self.progress.update(task, total=total or 1, completed=total or 1)


@contextlib.contextmanager
def progress(interactive: bool) -> Iterator[Steps]:
    """Steps drawn with rich when interactive, a silent `Steps` otherwise (same API)."""
    if not interactive:
        yield Steps()
        return
    # Step descriptions are shown as written (no markup), like every other text we print.
    with Progress(SpinnerColumn(finished_text="[green]✓"),
                  TextColumn("{task.description}", markup=False),
                  TimeElapsedColumn(), console=CONSOLE) as bar:
        yield RichSteps(bar)


