"""Progress of long work: tqdm's notebook bar in Jupyter (``tqdm.auto``), a text bar on a terminal, lines in a log.

The library reports progress through ``(done, total)`` callbacks (a flow adds its bits/dim as a third value);
``progress_callback`` turns one into a bar that opens on the first call and closes when ``done >= total``. The
command line's bars (``isoscope.commands.common.progress_bar``) are these, on stderr.

Where the stream is not a terminal (a script's log, CI, ``2> log``), a bar's ``\\r`` frames would pile up into one
unreadable line, so a stage is written as lines instead (``LineProgress``): one when it opens
(``embed: 0/1,000 texts``), then at most one per tenth of its work (``LINE_STEPS``), and only once
``LINE_INTERVAL_S`` seconds have passed since its last line (``embed: 400/1,000 texts (40%, 12 s)``), and the end of
a stage that lasted that long: a stage that ends sooner writes its one line, a long one at most eleven.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO

Callback = Callable[..., None]  # (done, total[, value])

LINE_STEPS = 10  # a long stage writes at most one line per tenth of its work ...
LINE_INTERVAL_S = 5.0  # ... and at most one per this many seconds (its opening line aside)


def progress_callback(
    desc: str, unit: str = "text", postfix: str = "value", *, enabled: bool = True, file: IO[str] | None = None
) -> Callback | None:
    """A (done, total[, value]) callback showing the progress of ``unit``s on ``file`` (default: stderr); None when
    not ``enabled`` (nothing at all). A bar on a terminal or in a notebook, lines (``LineProgress``) elsewhere.

    A third value (a flow's bits/dim) is shown after the bar as ``postfix=value``.
    """
    if not enabled:
        return None
    if not draws_bars(file):
        return LineProgress(desc, unit, postfix, file=file)
    state: dict[str, object] = {}

    def update(done: int, total: int, value: float | None = None) -> None:
        from tqdm.auto import tqdm

        bar = state.get("bar")
        if bar is None:
            if done >= total:  # nothing left to show: work read from a cache, or the closing (total, total) call
                return
            bar = state["bar"] = tqdm(total=total, desc=desc, unit=unit, file=file, leave=False)
        if bar.total != total:  # a stage opened as one step, then counted its work: the real total from now on
            bar.total = total
            bar.refresh()
        if value is not None:
            bar.set_postfix({postfix: f"{value:.4f}"})
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            state.pop("bar")

    return update


def draws_bars(file: IO[str] | None = None) -> bool:
    """Whether progress on ``file`` (default: stderr) is drawn as a bar: on a terminal, and in a notebook's own
    output (``file`` None in a Jupyter kernel: tqdm's widget); elsewhere it is written as lines."""
    if file is None and "ipykernel.zmqshell" in sys.modules:
        return True
    stream = sys.stderr if file is None else file
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


class LineProgress:
    """A (done, total[, value]) callback writing a stage as whole lines (no ``\\r``): ``desc: 0/1,000 texts`` when it
    opens, then ``desc: 400/1,000 texts (40%, 12 s)`` at most once per ``1/steps`` of the work and ``interval``
    seconds, and its end when it lasted ``interval`` seconds or more. Work found done on the first call (a cache)
    writes nothing; a call after the end opens the stage again.
    """

    def __init__(
        self,
        desc: str,
        unit: str = "text",
        postfix: str = "value",
        *,
        file: IO[str] | None = None,
        steps: int = LINE_STEPS,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.desc, self.units, self.postfix, self.file = desc, unit if unit == "it" else f"{unit}s", postfix, file
        self.steps, self.clock = max(1, steps), clock
        self.interval = LINE_INTERVAL_S if interval is None else interval  # (default: LINE_INTERVAL_S, read now)
        self.lock = threading.Lock()
        self.start: float | None = None  # when the open stage opened (None: no stage open)
        self.last = 0.0  # when its last line was written
        self.step = 0  # the tenth of its work its last line showed

    def __call__(self, done: int, total: int, value: float | None = None) -> None:
        with self.lock:
            now = self.clock()
            if self.start is None:
                if done >= total:  # nothing left to show: work read from a cache, or the closing call
                    return
                self.start, self.last, self.step = now, now, self._step(done, total)
                self._write(f"{done:,}/{total:,} {self.units}", value)
            else:
                step = self._step(done, total)
                due = now - self.last >= self.interval
                if step > self.step and (due or (done >= total and now - self.start >= self.interval)):  # a long
                    # stage's last line is written: when it ended
                    self.last, self.step = now, step
                    elapsed = now - self.start
                    self._write(
                        f"{done:,}/{total:,} {self.units} ({100 * done // max(total, 1)}%, {elapsed:.0f} s)", value
                    )
            if done >= total:
                self.start = None

    def _step(self, done: int, total: int) -> int:
        return min(self.steps, done * self.steps // total) if total > 0 else self.steps

    def _write(self, text: str, value: float | None) -> None:
        extra = "" if value is None else f", {self.postfix}={value:.4f}"
        stream = sys.stderr if self.file is None else self.file  # looked up now: a redirected stderr is followed
        stream.write(f"{self.desc}: {text}{extra}\n")
        stream.flush()
