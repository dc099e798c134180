"""python -m isoscope landscape: runs on a tiny model, prints JSON with both views and seeds, refuses bad input."""

from __future__ import annotations

import json

import pytest
import torch

from tests.core.commands.cli_checks import one_error_line
from tests.tiny_models import tiny_bert


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run far faster on one thread, and the test machine is shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert(1234, num_hidden_layers=3, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3)


def test_cli_runs_and_reports_bad_input(tiny, stsb_dir, tmp_path, capsys):
    from isoscope.cli import main

    model_dir = tmp_path / "tiny"
    tiny.model.save_pretrained(model_dir)
    tiny.tokenizer.save_pretrained(model_dir)
    args = ["landscape", "--model", str(model_dir), "--task", "stsb", "--stsb-dir", str(stsb_dir)]
    args += ["--n-train", "16", "--epochs", "1", "--lr", "1e-3", "--grid", "3", "--points-1d", "3"]
    args += ["--eval-size", "6", "--hessian-iters", "2", "--init", "pretrained", "--max-length", "32"]
    assert main([*args, "--out", str(tmp_path / "res"), "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["grid"]["grid"] == 3 and result["pretrained"]["theta1_coords"]["a"] == pytest.approx(1.0, abs=1e-5)
    assert main(["landscape", "--task", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "unknown task" in one_error_line(capsys)
    assert main([*args, "--range", "1", "0"]) == 2
    one_error_line(capsys)


def test_json_carries_the_filter_view_and_the_seed_summary(tiny, stsb_dir, tmp_path, capsys):
    from isoscope.cli import main

    model_dir = tmp_path / "tiny"
    tiny.model.save_pretrained(model_dir)
    tiny.tokenizer.save_pretrained(model_dir)
    args = ["landscape", "--model", str(model_dir), "--task", "demo-topic", "--n-train", "16", "--epochs", "2"]
    args += ["--lr", "1e-3", "--grid", "3", "--points-1d", "3", "--eval-size", "6", "--hessian-iters", "2"]
    args += ["--init", "scratch", "--max-length", "32", "--filter-directions", "2", "--filter-points", "3"]
    args += ["--sharpness-alphas", "0.5", "--learning-heldout", "8", "--seeds", "2", "--directions", "both"]
    assert main([*args, "--out", str(tmp_path / "res"), "--json", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    sharp = result["filter_normalized"]["scratch"]["sharpness"]
    assert sharp["alphas"] == [-0.5, 0.5] and sharp["n_directions"] == 2 and sharp["scale_invariant"] is True
    assert {"mean", "sd"} <= set(sharp) and "curve_1d" in result["filter_normalized"]["scratch"]
    assert result["seeds"] == 2 and result["seed_values"] == [0, 1]
    stats = result["summary"]["scratch"]
    assert stats["filter_sharpness"]["n"] == 2 and stats["filter_sharpness"]["sd"] is not None
    assert stats["hessian_top_eigenvalue"]["scale_invariant"] is False
    assert [r["epoch"] for r in result["scratch"]["learning_curve"]["rows"]] == [0, 1, 2]
    # the text report names what is scale-invariant
    assert main([*args, "--out", str(tmp_path / "res")]) == 0
    text = capsys.readouterr().out
    assert "sharpness (scale-invariant)" in text and "(not scale-invariant)" in text and "over 2 seeds" in text
    assert main([*args[:-4], "--directions", "task", "--out", str(tmp_path / "task"), "--json", "--quiet"]) == 0
    task_only = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert task_only["filter_normalized"] == {} and task_only["seeds"] == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--seeds", "0"], "seeds must be between"),
        (["--filter-range", "0.1", "1"], "must contain 0"),
        (["--sharpness-alphas", "5"], "inside"),
        (["--filter-directions", "1"], "at least 2"),
        (["--threads", "-1"], "--threads"),
    ],
)
def test_bad_new_options_are_one_line(tmp_path, capsys, extra, message):
    from isoscope.cli import main

    assert main(["landscape", "--task", "demo-topic", "--out", str(tmp_path / "x"), *extra]) == 2
    assert message in one_error_line(capsys)


def test_an_unknown_view_is_a_usage_error(capsys):
    from isoscope.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["landscape", "--task", "demo-topic", "--directions", "sideways"])
    assert exit_.value.code == 2 and "invalid choice" in one_error_line(capsys)


def test_device_cpu_given_is_the_default_run_on_this_machine(tiny, tmp_path, capsys):
    """``--device cpu`` and the default (auto, which is the CPU here) give the same numbers, digit for digit, and
    say where they ran; the CPU's results folder keeps the key it had before devices."""
    from isoscope.cli import main

    if torch.cuda.is_available():
        pytest.skip("auto picks the GPU on this machine")
    model_dir = tmp_path / "tiny"
    tiny.model.save_pretrained(model_dir)
    tiny.tokenizer.save_pretrained(model_dir)
    args = ["landscape", "--model", str(model_dir), "--task", "demo-pairs", "--n-train", "16", "--epochs", "1"]
    args += ["--lr", "1e-3", "--grid", "3", "--points-1d", "3", "--eval-size", "6", "--hessian-iters", "2"]
    args += ["--init", "scratch", "--max-length", "32", "--filter-directions", "2", "--filter-points", "3"]
    args += ["--learning-heldout", "8", "--json", "--quiet"]
    results = []
    for name, extra in (("default", []), ("cpu", ["--device", "cpu"])):
        assert main([*args, *extra, "--out", str(tmp_path / name)]) == 0
        results.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))
    default, cpu = (_numbers(r) for r in results)
    assert results[0]["device"] == results[1]["device"] == "cpu" and results[0]["dtype"] == "float32"
    for key in ("theta0", "theta1", "theta2", "axes", "curve_1d", "surface", "rollback", "flatness", "trajectory"):
        assert default["scratch"][key] == cpu["scratch"][key], key
    assert default["scratch"]["filter_normalized"] == cpu["scratch"]["filter_normalized"]
    assert default["scratch"]["learning_curve"] == cpu["scratch"]["learning_curve"]


def _numbers(result: object) -> object:
    """A result without what differs between two identical runs: timings and folders."""
    if isinstance(result, dict):
        return {k: _numbers(v) for k, v in result.items() if "seconds" not in k and k not in ("out_dir", "run_dir")}
    return [_numbers(v) for v in result] if isinstance(result, list) else result
