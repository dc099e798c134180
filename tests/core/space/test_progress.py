"""isoscope.space.progress: a bar on a terminal, whole lines in a log (issue 50 item 3: in a script or CI log the
bars' carriage-return frames piled up into one unreadable line). A stage in a log writes one line when it opens
and at most one more per tenth of its work, no more often than ``LINE_INTERVAL_S``; the clock is injected, so
these are exact."""

from __future__ import annotations

import io

from isoscope.space import progress as progress_module
from isoscope.space.progress import LINE_INTERVAL_S, LineProgress, draws_bars, progress_callback


class Clock:
    """A clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _lines(step: float, total: int, every: int = 1, **kwargs) -> list[str]:
    out = io.StringIO()
    stage = LineProgress("embed", file=out, clock=Clock(step), **kwargs)
    for done in range(0, total + 1, every):
        stage(done, total)
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    return text.splitlines()


def test_a_short_stage_is_one_line() -> None:
    assert _lines(0.0, 1000, 10) == ["embed: 0/1,000 texts"]  # over in no time: its opening line only


def test_a_long_stage_writes_at_most_one_line_per_tenth() -> None:
    lines = _lines(1.0, 1000)  # a second per text: every tenth is 100 s after the last
    assert len(lines) == 11
    assert lines[1] == "embed: 100/1,000 texts (10%, 100 s)"
    assert lines[-1] == "embed: 1,000/1,000 texts (100%, 1000 s)"


def test_lines_come_no_more_often_than_the_interval_but_a_long_stage_says_when_it_ended() -> None:
    assert LINE_INTERVAL_S == 5
    lines = _lines(0.25, 100)  # a tenth every 2.5 s: a line every other tenth
    assert lines == [f"embed: {d}/100 texts" + (f" ({d}%, {d // 4} s)" if d else "") for d in range(0, 101, 20)]
    lines = _lines(0.25, 90)  # 22.5 s: the tenths at 5 s intervals, then the end 2.5 s after the last
    assert lines[-2:] == ["embed: 80/90 texts (88%, 20 s)", "embed: 90/90 texts (100%, 22 s)"], lines


def test_work_found_done_writes_nothing_and_a_stage_can_open_again() -> None:
    out = io.StringIO()
    stage = LineProgress("fit", "epoch", "bits_per_dim", file=out, clock=Clock(10.0))
    stage(3, 3)  # read from a cache
    assert out.getvalue() == ""
    stage(0, 2, 3.25)
    stage(1, 2, 2.5)
    stage(2, 2, 2.0)
    stage(0, 1)  # the same callback, a second run
    assert out.getvalue().splitlines() == [
        "fit: 0/2 epochs, bits_per_dim=3.2500",
        "fit: 1/2 epochs (50%, 10 s), bits_per_dim=2.5000",
        "fit: 2/2 epochs (100%, 20 s), bits_per_dim=2.0000",
        "fit: 0/1 epochs",
    ]


def test_a_terminal_gets_a_bar_a_log_gets_lines() -> None:
    log, terminal = io.StringIO(), Terminal()
    assert not draws_bars(log) and draws_bars(terminal)
    assert isinstance(progress_callback("embed", file=log), LineProgress)
    bar = progress_callback("embed", file=terminal)
    assert not isinstance(bar, LineProgress)
    bar(0, 4)
    bar(2, 4)
    bar(4, 4)
    assert "\r" in terminal.getvalue() and "0/4 [" in terminal.getvalue()  # tqdm's frames (the check can fail)
    assert progress_callback("embed", file=log, enabled=False) is None


def test_the_interval_is_read_when_a_stage_is_made(monkeypatch) -> None:
    """``LINE_INTERVAL_S`` is looked up when a callback is made (the command tests set it to 0)."""
    monkeypatch.setattr(progress_module, "LINE_INTERVAL_S", 0.0)
    lines = _lines(0.001, 100)
    assert len(lines) == 11 and lines[5] == "embed: 50/100 texts (50%, 0 s)"
