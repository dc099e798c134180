"""isoscope.data.limits.COUNTS: the one table of stated maxima for counts a user gives, checked at parse time
(``count_option``: a usage error naming the flag) and in the library (``check_count``)."""

from __future__ import annotations

import argparse

import pytest

from isoscope.cli import build_parser
from isoscope.data.limits import COUNTS, check_count, count_option
from isoscope.errors import InputError

# the options that take a count from the table: (command, dest)
OPTIONS = [("retrieval", "resamples"), ("embed", "actors"), ("embed", "num_cpus"), ("atlas", "shard_rows")]


@pytest.mark.parametrize("what", sorted(COUNTS))
def test_each_count_takes_its_range_and_refuses_one_past_each_end(what: str) -> None:
    count = COUNTS[what]
    assert 0 <= count.least < count.most
    assert check_count(what, count.least) == count.least and check_count(what, count.most) == count.most
    for bad in (count.least - 1, count.most + 1):
        with pytest.raises(InputError, match=rf"between {count.least:,} and {count.most:,}"):
            check_count(what, bad, f"the {what}")
    parse = count_option(what)
    assert parse(f"{count.most:_}") == count.most  # 1_000_000 is a whole number too
    with pytest.raises(argparse.ArgumentTypeError, match=f"got {count.most + 1:,}"):
        parse(str(count.most + 1))
    with pytest.raises(argparse.ArgumentTypeError, match="whole number"):
        parse("1e6")
    with pytest.raises(InputError, match="whole number"):
        check_count(what, True)


@pytest.mark.parametrize(("command", "dest"), OPTIONS)
def test_every_default_is_inside_the_table(command: str, dest: str) -> None:
    """The options' defaults pass their own check (a default the table refused would break every plain run)."""
    sub = build_parser([command])._subparsers._group_actions[0].choices[command]
    action = next(a for a in sub._actions if a.dest == dest)
    assert action.type.__name__ == dest and COUNTS[dest].least <= action.default <= COUNTS[dest].most
