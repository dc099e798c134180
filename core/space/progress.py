"""Progress bars for long work: tqdm's notebook bar in Jupyter (``tqdm.auto``), a text bar elsewhere.

The library reports progress through ``(done, total)`` callbacks (a flow adds its bits/dim as a third value);
``progress_callback`` turns one into a bar that opens on the first call and closes when ``done >= total``. The
command line's bars (``isoscope.commands.common.progress_bar``) are these, on stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

Callback = Callable[..., None]  # (done, total[, value])


def progress_callback(
    desc: str, unit: str = "text", postfix: str = "value", *, enabled: bool = True, file: IO[str] | None = None
) -> Callback | None:
    """A (done, total[, value]) callback drawing a bar of ``unit``; None when not ``enabled`` (no bar at all).

    A third value (a flow's bits/dim) is shown after the bar as ``postfix=value``.
    """
    if not enabled:
        return None
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
