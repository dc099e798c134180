"""Tests of core.landscape: exact plane geometry, an analytic quadratic loss, tasks, and a tiny BERT end to end."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch.func import functional_call

from core.errors import InputError
from core.landscape.axes import make_plane, project
from core.landscape.classifier import Evaluator, build_classifier, make_eval_set
from core.landscape.curvature import grid_curvature, hessian_top_eigenvalue, hvp
from core.landscape.flat import FlatLayout, dot, norm
from core.landscape.pipeline import LandscapeConfig, run_landscape
from core.landscape.results import load_results
from core.landscape.rollback import layer_groups, rollback_table
from core.landscape.store import RowStore
from core.landscape.surface import curve_1d, grid_size_for_budget, interpolate, surface_2d
from core.landscape.tasks import load_task, load_task_file, sample
from core.landscape.train import TrainConfig
from tests.core.cli_checks import one_error_line
from tests.tiny_models import tiny_bert

# ---------------------------------------------------------------- exact geometry


def _points(p: int = 400, seed: int = 0, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    theta0 = torch.randn(p, generator=g, dtype=dtype)
    d1 = torch.randn(p, generator=g, dtype=dtype)
    d2 = 0.6 * d1 + torch.randn(p, generator=g, dtype=dtype)  # correlated with d1 on purpose
    return theta0, theta0 + d1, theta0 + 0.5 * d2


def test_end_points_project_exactly():
    theta0, theta1, theta2 = _points()
    plane = make_plane(theta0, theta1, theta2)
    d1, d2 = (theta1 - theta0).double().numpy(), (theta2 - theta0).double().numpy()
    n1, n2 = np.linalg.norm(d1), np.linalg.norm(d2)
    cos = d1 @ d2 / (n1 * n2)
    assert plane.cos_delta1_delta2 == pytest.approx(cos, abs=1e-6)
    assert plane.kept_fraction == pytest.approx(math.sqrt(1 - cos**2), abs=1e-6)
    assert abs(plane.cos_e1_e2) < 1e-6  # measured, not assumed
    assert norm(plane.e2) == pytest.approx(n1, rel=1e-6)

    p1 = project(plane, theta1)
    assert (p1.a, p1.b) == (pytest.approx(1.0, abs=1e-6), pytest.approx(0.0, abs=1e-6))
    assert p1.residual < 1e-6
    p2 = project(plane, theta2)
    assert p2.a == pytest.approx(cos * n2 / n1, abs=1e-6)
    assert p2.b == pytest.approx(math.sqrt(1 - cos**2) * n2 / n1, abs=1e-6)
    assert p2.b > 0 and p2.residual < 1e-6
    assert project(plane, theta0) == project(plane, theta0.clone())  # origin: (0, 0), residual 0
    assert project(plane, theta0).a == 0.0


def test_coordinates_are_signed_behind_the_origin():
    theta0, theta1, theta2 = _points(seed=1)
    plane = make_plane(theta0, theta1, theta2)
    p = project(plane, plane.point(-0.5, -0.25))
    assert p.a == pytest.approx(-0.5, abs=1e-6)
    assert p.b == pytest.approx(-0.25, abs=1e-6)
    assert p.residual < 1e-6
    # an unsigned distance would give the same value for +0.5 and -0.5: coordinates do not
    assert project(plane, plane.point(0.5, 0.25)).a == pytest.approx(0.5, abs=1e-6)


def test_off_plane_point_has_its_exact_residual():
    theta0, theta1, theta2 = _points(seed=2, dtype=torch.float64)
    plane = make_plane(theta0, theta1, theta2)
    E = torch.stack([plane.e1, plane.e2], 1)  # (p, 2)
    w = torch.randn(theta0.shape[0], generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    w -= E @ torch.linalg.solve(E.T @ E, E.T @ w)  # orthogonal to the plane
    w *= 0.8 * norm(plane.e1) / norm(w)
    theta = plane.point(0.3, 0.7) + w
    p = project(plane, theta)
    assert (p.a, p.b) == (pytest.approx(0.3, abs=1e-9), pytest.approx(0.7, abs=1e-9))
    assert p.residual == pytest.approx(norm(w) / norm(theta - theta0), rel=1e-9)
    assert p.residual > 0.1


def test_parallel_second_axis_is_refused():
    theta0, theta1, _ = _points()
    with pytest.raises(ValueError, match="parallel"):
        make_plane(theta0, theta1, theta0 + 2.0 * (theta1 - theta0))


# ---------------------------------------------------------------- analytic quadratic


class Quadratic(torch.nn.Module):
    """A module whose loss is 0.5 (x - x*)^T H (x - x*), x = its two parameters (a vector and a matrix) flattened.

    ``loss`` and ``evaluate`` take a flat theta and go through FlatLayout + functional_call, the same
    path the transformer evaluator uses.
    """

    def __init__(self, n: int = 12, seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        self.eigs = np.r_[10.0, 4.0, np.linspace(2.0, 0.1, n - 2)]
        self.register_buffer("H", torch.tensor(q @ np.diag(self.eigs) @ q.T))
        self.register_buffer("x_star", torch.tensor(rng.standard_normal(n)))
        self.vec = torch.nn.Parameter(torch.zeros(n - 6, dtype=torch.float64))
        self.mat = torch.nn.Parameter(torch.zeros(2, 3, dtype=torch.float64))
        self.layout = FlatLayout.from_module(self)

    def forward(self) -> torch.Tensor:
        d = torch.cat([self.vec, self.mat.reshape(-1)]) - self.x_star
        return 0.5 * d @ self.H @ d

    def loss(self, theta: torch.Tensor) -> torch.Tensor:
        return functional_call(self, self.layout.unflatten(theta), args=())

    def evaluate(self, theta: torch.Tensor) -> dict[str, float]:
        return {"train_loss": float(self.loss(theta))}


def test_surface_and_curve_match_the_analytic_quadratic():
    quad = Quadratic()
    plane = make_plane(*_points(12, seed=4, dtype=torch.float64))
    alphas, betas = np.linspace(-0.5, 1.5, 7), np.linspace(-1.0, 1.0, 5)
    grid = surface_2d(quad.evaluate, plane, alphas, betas)
    u = (plane.origin - quad.x_star).numpy()
    e1, e2, H = plane.e1.numpy(), plane.e2.numpy(), quad.H.numpy()
    assert quad.layout.size == 12 and quad.layout.shapes == ((6,), (2, 3))
    expected = np.array([[0.5 * (u + a * e1 + b * e2) @ H @ (u + a * e1 + b * e2) for b in betas] for a in alphas])
    np.testing.assert_allclose(grid["train_loss"], expected, rtol=1e-10)
    assert grid["train_loss"].shape == (7, 5)
    curve = curve_1d(quad.evaluate, plane.origin, plane.e1, alphas)
    np.testing.assert_allclose(curve["train_loss"], expected[:, 2], rtol=1e-10)  # betas[2] == 0


def test_grid_curvature_and_power_iteration_match_the_hessian():
    quad = Quadratic()
    plane = make_plane(*_points(12, seed=5, dtype=torch.float64))
    alphas, betas = np.linspace(-0.5, 1.5, 7), np.linspace(-1.0, 1.0, 7)  # 1.0 is not a grid point
    grid = surface_2d(quad.evaluate, plane, alphas, betas)
    curv = grid_curvature(alphas, betas, grid["train_loss"], (1.0, 0.0), plane.gram)
    E = torch.stack([plane.e1, plane.e2], 1).numpy()  # (p, 2)
    H = quad.H.numpy()
    np.testing.assert_allclose(curv["hessian_plane"], E.T @ H @ E, rtol=1e-6)
    Q, _ = np.linalg.qr(E)  # orthonormal basis of the plane
    np.testing.assert_allclose(curv["eigenvalues_param"], np.linalg.eigvalsh(Q.T @ H @ Q), rtol=1e-6)
    assert max(curv["eigenvalues_param"]) <= quad.eigs.max() + 1e-9

    v = torch.randn(12, dtype=torch.float64)
    torch.testing.assert_close(hvp(quad.loss, plane.origin, v), quad.H @ v)
    top = hessian_top_eigenvalue(quad.loss, plane.origin, iters=200, tol=1e-10, seed=0)
    assert top.eigenvalue == pytest.approx(quad.eigs.max(), rel=1e-3)
    assert top.converged


def test_interpolation_is_exact_for_bilinear_functions():
    a, b = np.linspace(-1, 2, 4), np.linspace(0, 1, 3)
    values = np.array([[1 + 2 * x - 3 * y + 0.5 * x * y for y in b] for x in a])
    for x, y in [(0.3, 0.2), (-1.0, 0.0), (2.0, 1.0), (1.7, 0.9)]:
        assert interpolate(a, b, values, x, y) == pytest.approx(1 + 2 * x - 3 * y + 0.5 * x * y)
    assert math.isnan(interpolate(a, b, values, 2.5, 0.5))


def test_grid_size_for_budget():
    assert grid_size_for_budget(0.5, 120.0) == 15  # sqrt(240) = 15.5
    assert grid_size_for_budget(1.0, 10.0) == 5  # at least 5
    assert grid_size_for_budget(0.001, 1e6) == 41  # at most 41
    with pytest.raises(ValueError):
        grid_size_for_budget(0.0, 10.0)


def test_interrupted_grid_resumes_from_saved_rows(tmp_path):
    quad = Quadratic()
    plane = make_plane(*_points(12, seed=6, dtype=torch.float64))
    alphas, betas = np.linspace(-0.5, 1.5, 5), np.linspace(-1.0, 1.0, 4)
    calls = {"n": 0}

    def flaky(x: torch.Tensor) -> dict[str, float]:
        calls["n"] += 1
        if calls["n"] > 10:  # interrupted during the third row
            raise KeyboardInterrupt
        return quad.evaluate(x)

    rows = RowStore(tmp_path, "k" * 40)
    with pytest.raises(KeyboardInterrupt):
        surface_2d(flaky, plane, alphas, betas, rows=rows)
    calls["n"] = -1000
    resumed = surface_2d(flaky, plane, alphas, betas, rows=RowStore(tmp_path, "k" * 40))
    assert calls["n"] == -1000 + 3 * 4  # only the three unfinished rows were evaluated
    full = surface_2d(quad.evaluate, plane, alphas, betas)
    np.testing.assert_array_equal(resumed["train_loss"], full["train_loss"])


# ---------------------------------------------------------------- tasks


def test_stsb_task_is_binary_at_three(stsb_dir):
    from core.data import load_pairs

    split = load_task("stsb", data_dir=stsb_dir)
    pairs = load_pairs(stsb_dir / "stsb-en-train.csv")
    assert split.train.is_pair and split.train.n_classes == 2
    np.testing.assert_array_equal(split.train.labels, (pairs.scores >= 3).astype(int))
    assert len(split.heldout) == len(load_pairs(stsb_dir / "stsb-en-dev.csv"))


def test_demo_tasks_split_every_class():
    topic = load_task("demo-topic", seed=0)
    assert topic.train.n_classes == 8 and not topic.train.is_pair
    assert min(topic.heldout.class_counts()) >= 1 and min(topic.train.class_counts()) >= 1
    assert set(topic.train.texts_a).isdisjoint(topic.heldout.texts_a)
    pairs = load_task("demo-pairs", seed=0)
    assert pairs.train.is_pair and pairs.train.n_classes == 2
    assert len(sample(topic.train, 10, 0)) == 10


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("text,score\na,1\nb,2\n", "label"),
        ("text,label\na,x\nb,x\n", "only one label"),
        ("text,label\na,x\nb,x\nc,y\n", "fewer than 2"),
        ("review,label\na,x\nb,y\n", "name the text column"),
        ("hello,1\nworld,0\n", "label"),
        ("text,label\n,x\n ,y\n", "no row"),
    ],
)
def test_task_file_errors_say_what_to_fix(tmp_path, content, message):
    path = tmp_path / "task.csv"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        load_task(str(path))


def test_task_file_pairs_and_unknown_task(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("sentence1,sentence2,label\n" + "".join(f"a{i},b{i},{i % 2}\n" for i in range(12)))
    task, warnings = load_task_file(path)
    assert task.is_pair and task.n_classes == 2 and task.label_names == ["0", "1"] and not warnings
    with pytest.raises(InputError, match="demo-topic"):
        load_task("no-such-task")


# ---------------------------------------------------------------- tiny BERT


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


@pytest.fixture(scope="module")
def tasks(stsb_dir):
    return load_task("stsb", 0, stsb_dir), load_task("demo-topic", 0)


@pytest.fixture(scope="module")
def tiny_eval(tiny, tasks):
    model = build_classifier(tiny, 2, "pretrained", seed=0)
    layout = FlatLayout.from_module(model)
    eval_set = make_eval_set(tiny.tokenizer, sample(tasks[0].train, 12, 1), sample(tasks[0].heldout, 12, 2), 64, 8)
    return model, layout, Evaluator(model, layout, eval_set)


def test_theta_covers_every_used_parameter(tiny, tiny_eval):
    model, layout, _ = tiny_eval
    assert "encoder.pooler.dense.weight" not in layout.names  # unused by mean pooling: removed
    assert layout.names[-2:] == ("head.weight", "head.bias")
    assert layout.size == sum(p.numel() for p in model.parameters())
    assert tiny.model.pooler is not None  # the shared encoder is untouched
    again = build_classifier(tiny, 2, "scratch", seed=0)
    torch.testing.assert_close(again.head.weight, model.head.weight)  # same seeded head for both inits
    assert not torch.equal(
        again.encoder.embeddings.word_embeddings.weight, model.encoder.embeddings.word_embeddings.weight
    )


def test_evaluation_has_dropout_off_and_matches_the_module(tiny_eval):
    model, layout, evaluate = tiny_eval
    theta = layout.flatten(model)
    first, second = evaluate(theta), evaluate(theta)
    assert first == second
    chunk = evaluate.eval_set.chunks[0]
    model.train()  # dropout on: two forward passes differ, so the equality above is meaningful
    with torch.no_grad():
        out_a = functional_call(model, layout.unflatten(theta), args=(), kwargs=chunk.inputs)
        out_b = functional_call(model, layout.unflatten(theta), args=(), kwargs=chunk.inputs)
    assert not torch.allclose(out_a, out_b)
    assert evaluate(theta) == first and not model.training
    # functional_call on the flat vector gives what the module's own weights give
    with torch.no_grad():
        own = model(**chunk.inputs)
    torch.testing.assert_close(functional_call(model, layout.unflatten(theta), args=(), kwargs=chunk.inputs), own)
    loss = evaluate.train_loss(theta)
    assert loss.item() == pytest.approx(first["train_loss"], rel=1e-5)


def test_rollback_restores_exactly_one_group(tiny, tiny_eval):
    model, layout, evaluate = tiny_eval
    theta0 = layout.flatten(model)
    groups = layer_groups(layout, tiny.num_layers)
    assert [g for g in groups] == ["embeddings", "lower", "middle", "upper", "encoder"]
    assert groups["upper"].layers == (2,)
    parts = sum(groups[g].n_params for g in ("embeddings", "lower", "middle", "upper"))
    assert parts == groups["encoder"].n_params == layout.prefix_size("encoder.")
    theta1 = theta0.clone()
    for a, b in groups["upper"].slices:
        theta1[a:b] += 0.5 * torch.randn(b - a, generator=torch.Generator().manual_seed(a))
    rows = {r["group"]: r for r in rollback_table(evaluate, layout, theta0, theta1, tiny.num_layers)}
    at0, at1 = evaluate(theta0), evaluate(theta1)
    assert at1["train_loss"] != at0["train_loss"]
    assert rows["none"]["train_loss"] == at1["train_loss"]
    assert rows["upper"]["train_loss"] == at0["train_loss"] and rows["encoder"]["train_loss"] == at0["train_loss"]
    for g in ("embeddings", "lower", "middle"):
        assert rows[g]["train_loss"] == at1["train_loss"] and rows[g]["change_norm"] == 0.0
    assert rows["upper"]["change_norm"] == pytest.approx(norm(theta1 - theta0), rel=1e-6)


def test_curve_1d_on_the_tiny_model_hits_both_end_points(tiny_eval):
    model, layout, evaluate = tiny_eval
    theta0 = layout.flatten(model)
    theta1 = theta0 + 0.05 * torch.randn(theta0.shape, generator=torch.Generator().manual_seed(0))
    curve = curve_1d(evaluate, theta0, theta1 - theta0, [-0.5, 0.0, 1.0, 1.5])
    assert curve["train_loss"][1] == evaluate(theta0)["train_loss"]
    assert curve["train_loss"][2] == pytest.approx(evaluate(theta1)["train_loss"], rel=1e-5)
    assert set(curve) >= {"alpha", "train_loss", "train_acc", "heldout_loss", "heldout_acc"}


def _tiny_config(**over) -> LandscapeConfig:
    train = TrainConfig(lr=1e-3, epochs=2, batch_size=8, n_train=24, max_length=48, seed=0)
    base = LandscapeConfig(train=train, eval_size=8, eval_chunk=8, grid=5, points_1d=5, hessian_iters=3)
    return replace(base, **over)


def test_pipeline_end_to_end_cached_and_resumed(tiny, tasks, tmp_path):
    out = tmp_path / "out"
    s = run_landscape(tiny, tasks[0], tasks[1], _tiny_config(), out)
    for init in ("pretrained", "scratch"):
        r = s[init]
        assert r["theta1_coords"]["a"] == pytest.approx(1.0, abs=1e-5)
        assert r["theta1_coords"]["b"] == pytest.approx(0.0, abs=1e-5)
        assert r["theta2_coords"]["residual"] < 1e-5 and r["theta2_coords"]["b"] > 0
        assert abs(r["axes"]["cos_e1_e2"]) < 1e-5
        traj = {(t["run"], t["epoch"]): t for t in r["trajectory"]}
        assert traj[("task1", 2)]["residual"] < 1e-5 and traj[("task1", 0)]["distance"] == 0.0
        assert traj[("task1", 1)]["residual"] > 0.0  # the epoch-1 point is off the plane
        assert traj[("task1", 2)]["train_loss"] == r["theta1"]["train_loss"]
        # the surface under theta1 is the true loss there (theta1 is on the plane)
        assert traj[("task1", 2)]["surface_train_loss"] == pytest.approx(
            r["surface"]["train_loss_at_theta1"], rel=1e-9
        )  # theta1 = (1, 0) is a grid point of the default range
        assert [row["group"] for row in r["rollback"]] == ["none", "embeddings", "lower", "middle", "upper", "encoder"]
        assert r["flatness"]["hessian"]["iterations"] >= 1 and r["flatness"]["grid_train_loss"]["ok"]
    assert s["pretrained"]["digests"]["origin"] != s["scratch"]["digests"]["origin"]

    loaded = load_results(out)
    assert set(loaded.inits) == {"pretrained", "scratch"}
    surface = loaded.inits["pretrained"].surface
    assert surface["train_loss"].shape == (5, 5) and surface["heldout_error"].shape == (5, 5)
    assert not loaded.inits["scratch"].trajectory_frame().empty

    # a second run reads everything back: no training, identical arrays
    again = run_landscape(tiny, tasks[0], tasks[1], _tiny_config(), out)
    assert again["pretrained"]["train"]["task1"]["trained_epochs"] == 0
    np.testing.assert_array_equal(load_results(out).inits["pretrained"].surface["train_loss"], surface["train_loss"])
    assert again["pretrained"]["flatness"] == s["pretrained"]["flatness"]

    # a training run interrupted in its second epoch resumes after the first and ends at the same weights
    final = json.loads(next((out / "checkpoints").glob("pretrained-task1-*")).joinpath("epoch_002.json").read_text())

    def interrupt(desc: str):
        def callback(done: int, total: int) -> None:
            if desc == "train pretrained task1" and done > total // 2:
                raise KeyboardInterrupt

        return callback

    out2 = tmp_path / "out2"
    with pytest.raises(KeyboardInterrupt):
        run_landscape(tiny, tasks[0], tasks[1], _tiny_config(inits=("pretrained",)), out2, interrupt)
    resumed = run_landscape(tiny, tasks[0], tasks[1], _tiny_config(inits=("pretrained",)), out2)
    assert resumed["pretrained"]["train"]["task1"]["trained_epochs"] == 1
    run_dir = next((out2 / "checkpoints").glob("pretrained-task1-*"))
    assert json.loads((run_dir / "epoch_002.json").read_text())["digest"] == final["digest"]
    assert not (run_dir / "optimizer.safetensors").exists()  # removed once the run is complete


def test_cli_runs_and_reports_bad_input(tiny, stsb_dir, tmp_path, capsys):
    from core.cli import main

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


def test_float64_dot_is_accurate():
    x = torch.full((3_000_000,), 0.1, dtype=torch.float32)
    assert dot(x, x) == pytest.approx(3_000_000 * float(np.float32(0.1)) ** 2, rel=1e-10)


def test_array_store_keeps_cache_keys_scalar(tmp_path) -> None:
    """A 0-d key must read back as itself, or every cached curve/surface is silently recomputed."""
    from core.landscape.store import read_arrays, write_arrays

    write_arrays(tmp_path / "a.npz", {"key": np.array("abc123"), "loss": np.ones((2, 3))})
    back = read_arrays(tmp_path / "a.npz")
    assert back["key"].shape == () and str(back["key"]) == "abc123"
    assert back["loss"].shape == (2, 3)


def test_checkpoint_check_reads_the_header_and_refuses_broken_files(tmp_path) -> None:
    """A finished epoch is recognised from its sidecar and safetensors header; a truncated file is not one."""
    from core.landscape.flat import vector_digest
    from core.landscape.store import write_tensors
    from core.landscape.train import _ckpt_path, _read_checkpoint

    theta = torch.arange(10, dtype=torch.float32)
    path = _ckpt_path(tmp_path, 1)
    write_tensors(path, {"theta": theta}, {"key": "k", "digest": vector_digest(theta), "train_loss": 0.5})
    found = _read_checkpoint(tmp_path, 1, "k")
    assert found is not None and found.digest == vector_digest(theta) and found.train_loss == 0.5
    torch.testing.assert_close(found.load(), theta)
    assert _read_checkpoint(tmp_path, 1, "other key") is None
    assert _read_checkpoint(tmp_path, 2, "k") is None
    path.write_bytes(path.read_bytes()[:-4])
    assert _read_checkpoint(tmp_path, 1, "k") is None
    write_tensors(path, {"not_theta": theta}, {"key": "k", "digest": vector_digest(theta), "train_loss": 0.5})
    assert _read_checkpoint(tmp_path, 1, "k") is None


def test_rollback_takes_known_metrics_at_theta1(tiny, tiny_eval) -> None:
    """Passing evaluate(theta1) gives the same table and skips that evaluation."""
    model, layout, evaluate = tiny_eval
    theta0 = layout.flatten(model)
    theta1 = theta0 + 0.05 * torch.randn(theta0.shape, generator=torch.Generator().manual_seed(1))
    calls: list[torch.Tensor] = []

    def counted(theta: torch.Tensor) -> dict[str, float]:
        calls.append(theta)
        return evaluate(theta)

    full = rollback_table(counted, layout, theta0, theta1, tiny.num_layers)
    n_full = len(calls)
    known = rollback_table(counted, layout, theta0, theta1, tiny.num_layers, at_theta1=evaluate(theta1))
    assert known == full
    assert len(calls) - n_full == n_full - 1
