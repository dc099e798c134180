"""Issue 51, item 3, on counts: numbers a user types were believed before allocating. ``--resamples 10**12`` asked
for 58 TiB, ``--actors 100000`` started actors until 4 GB, a 900 kB default prompt on 200 texts grew past 4 GB.

Every such count is checked against ``isoscope.data.limits.COUNTS`` (at parse time for an option, one line naming
the flag; in the library for a parameter), and a prompt is counted (characters, then its tokens, once) against the
room a text has before any text is tokenized with it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from isoscope.data.limits import COUNTS
from isoscope.encode.models import default_model_path
from isoscope.encode.recipe import CARD_FILE
from isoscope.errors import InputError
from tests.hostile.cli_child import assert_refused, run_cli_child
from tests.hostile.conftest import assert_cli_refused
from tests.hostile.peak import GiB

HUGE = str(10**12)


def _corpus(tmp_path: Path, n: int = 200) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(f"sentence number {i} about a dog" for i in range(n)) + "\n")
    return path


# (case, argv without the files, the flag named); every one is refused while the command line is parsed
OPTIONS: list[tuple[str, list[str], str]] = [
    ("resamples", ["retrieval", "--calibrate", "raw", "--resamples", HUGE], "--resamples"),
    ("resamples_too_few", ["retrieval", "--calibrate", "raw", "--resamples", "10"], "--resamples"),
    ("actors", ["embed", "--engine", "ray", "--shard-dir", "{tmp}/s", "--actors", "100000"], "--actors"),
    ("num_cpus", ["embed", "--engine", "ray", "--shard-dir", "{tmp}/s", "--num-cpus", "100000"], "--num-cpus"),
    ("chunk_size", ["embed", "--input", "{corpus}", "--out", "{tmp}/v.npy", "--chunk-size", HUGE], "--chunk-size"),
    ("shard_rows", ["atlas", "--input", "{corpus}", "--out", "{tmp}/a", "--shard-rows", HUGE], "--shard-rows"),
    ("not_a_number", ["retrieval", "--resamples", "10**12"], "--resamples"),
]


def _argv(argv: list[str], tmp_path: Path, corpus: Path) -> list[str]:
    return [a.format(tmp=tmp_path, corpus=corpus) for a in argv]


@pytest.mark.parametrize(("case", "argv", "flag"), OPTIONS, ids=[c[0] for c in OPTIONS])
def test_a_count_out_of_its_range_is_refused_naming_the_flag(cli, tmp_path, case, argv, flag) -> None:
    r = cli(*_argv(argv, tmp_path, _corpus(tmp_path)))
    line = assert_cli_refused(r, flag)
    if case != "not_a_number":
        what = COUNTS[flag.lstrip("-").replace("-", "_")]
        assert f"{what.most:,}" in line  # the stated maximum, from the one table
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]  # nothing written


def test_a_local_ray_gets_no_more_cpus_than_the_machine_has(cli, tmp_path) -> None:
    cpus = max(os.cpu_count() or 1, 2)
    argv = ["--engine", "ray", "--shard-dir", str(tmp_path / "s"), "--num-cpus", str(cpus + 1)]
    r = cli("embed", "--input", str(_corpus(tmp_path)), *argv)
    assert_cli_refused(r, "--num-cpus", f"{cpus} CPUs")
    assert not (tmp_path / "s").exists()


def test_library_calls_check_the_same_table(tmp_path) -> None:
    """The notebook API and the dashboard do not parse flags: the library checks the counts too, before work."""
    from isoscope.encode.shards import embed_with_ray
    from isoscope.retrieval.run import RetrievalConfig

    with pytest.raises(InputError, match=r"resamples must be between 100 and 1,000,000"):
        RetrievalConfig(resamples=10**12)
    with pytest.raises(InputError, match=r"number of actors must be between 1 and 1,024"):
        embed_with_ray(["a text"], tmp_path / "shards", num_actors=100_000)
    assert not (tmp_path / "shards").exists()


def _model_with_card(tmp_path: Path, card: dict) -> Path:
    """The embedded model's files (linked, not copied; its module folders copied: a module folder must resolve
    inside the model's folder) with ``card`` as its config_sentence_transformers.json."""
    folder = tmp_path / "prompted-model"
    folder.mkdir()
    for entry in Path(default_model_path()).iterdir():
        if entry.is_dir():
            shutil.copytree(entry, folder / entry.name)
        elif entry.name != CARD_FILE:
            (folder / entry.name).symlink_to(entry)
    (folder / CARD_FILE).write_text(json.dumps(card))
    return folder


def _huge_default_prompt(tmp_path: Path) -> Path:
    """A card whose default prompt is 900 kB (issue 51: on 200 texts it grew past 4 GB)."""
    return _model_with_card(tmp_path, {"prompts": {"big": "word " * 180_000}, "default_prompt_name": "big"})


def test_a_huge_default_prompt_is_refused_before_any_text_is_tokenized(cli, tmp_path) -> None:
    folder = _huge_default_prompt(tmp_path)
    r = cli("embed", "--model", str(folder), "--input", str(_corpus(tmp_path)), "--out", str(tmp_path / "v.npy"))
    assert_cli_refused(r, "prompt 'big'", "10,000", "900,000")
    assert not (tmp_path / "v.npy").exists()


def test_a_prompt_that_leaves_no_room_for_the_text_is_refused(encoder) -> None:
    """A prompt is tokenized once and counted in the max length: one that fills it (with [CLS] and [SEP]) would
    embed every text as the prompt alone; one token less leaves a token of room, and runs."""
    from isoscope.encode.embed import EmbedConfig, encode

    prompt = "Represent this sentence for searching relevant passages: "
    tokens = len(encoder.tokenizer([prompt])["input_ids"][0])  # with the special tokens
    with pytest.raises(InputError, match=rf"prompt is {tokens} tokens .* cut at {tokens}: no room") as info:
        encode(encoder, ["a dog"], "mean", config=EmbedConfig(max_length=tokens, prompt=prompt))
    assert "\n" not in str(info.value)
    vectors = encode(encoder, ["a dog"], "mean", config=EmbedConfig(max_length=tokens + 1, prompt=prompt))
    assert vectors.shape == (1, 384)


def test_the_refusals_cost_little(tmp_path) -> None:
    """The huge prompt and every option above in one child process: exit 2 and one line each, peak under 1 GiB."""
    corpus = _corpus(tmp_path)
    folder = _huge_default_prompt(tmp_path)
    argvs = [["embed", "--model", str(folder), "--input", str(corpus), "--out", str(tmp_path / "v.npy"), "--quiet"]]
    argvs += [_argv(argv, tmp_path, corpus) for _, argv, _ in OPTIONS]
    run = run_cli_child(argvs, tmp_path)
    assert_refused(run.results[0], "prompt 'big'", "10,000")
    for (_, _, flag), result in zip(OPTIONS, run.results[1:], strict=True):
        assert_refused(result, flag)
    assert not (tmp_path / "v.npy").exists()
    assert run.peak < GiB, f"peak {run.peak / 2**20:.0f} MiB"


def test_no_more_actors_start_than_shards_or_local_cpus() -> None:
    """Within the table, the pool is still no larger than the work (the shards left) nor, on a Ray started for
    the run, its CPUs: actors past those would wait, each holding a copy of the model."""
    from isoscope.encode.shards import pool_size

    assert pool_size(1024, 3) == 3 and pool_size(1024, 500, cpus=2) == 2 and pool_size(4, 500) == 4
