"""isoscope.landscape.tasks: built-in tasks, labelled files and their errors, seeded splits and samples."""

from __future__ import annotations

import numpy as np
import pytest

from isoscope.errors import InputError
from isoscope.landscape.tasks import load_task, load_task_file, sample


def test_stsb_task_is_binary_at_three(stsb_dir):
    from isoscope.data import load_pairs

    split = load_task("stsb", data_dir=stsb_dir)
    pairs = load_pairs(stsb_dir / "stsb-en-train.csv")
    assert split.train.is_pair and split.train.n_classes == 2
    np.testing.assert_array_equal(split.train.labels, (pairs.scores >= 3).astype(int))
    assert len(split.heldout) == len(load_pairs(stsb_dir / "stsb-en-dev.csv"))


def test_demo_tasks_split_every_class():
    topic = load_task("demo-topic", seed=0)
    from isoscope.data import load_corpus
    from isoscope.paths import DEMO_CORPUS

    topics = load_corpus(DEMO_CORPUS).meta["topic"].nunique()  # 31 in the shipped demo
    assert topic.train.n_classes == topics and not topic.train.is_pair
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


def test_split_is_stratified_seeded_and_disjoint():
    from isoscope.landscape.tasks import Task, split_task

    labels = np.r_[np.zeros(20, int), np.ones(8, int), np.full(2, 2)]
    task = Task([f"t{i}" for i in range(30)], None, labels, 3, "toy")
    split = split_task(task, seed=1)
    assert split.heldout.class_counts() == [5, 2, 1]  # 25% of each class, at least one
    assert set(split.train.texts_a).isdisjoint(split.heldout.texts_a) and len(split.train) == 22
    assert split_task(task, seed=1).heldout.texts_a == split.heldout.texts_a
    assert split_task(task, seed=2).heldout.texts_a != split.heldout.texts_a
    assert sample(task, 100, 0) is task and sample(task, 5, 0).texts_a == sample(task, 5, 0).texts_a
    with pytest.raises(ValueError, match="same length"):
        Task(["a"], None, [0, 1], 2, "bad")
    with pytest.raises(ValueError, match="labels must lie"):
        Task(["a", "b"], None, [0, 2], 2, "bad")
    assert task.digest() != task.subset(np.arange(29)).digest()


def test_available_tasks_name_stsb_only_when_its_files_are_there(stsb_dir, tmp_path):
    from isoscope.landscape.tasks import STSB_FILES, available_tasks

    assert available_tasks(stsb_dir) == ("demo-topic", "demo-pairs", "stsb")
    (tmp_path / STSB_FILES[0]).write_text("a,b,1\n")  # the training file alone is not enough
    assert available_tasks(tmp_path) == ("demo-topic", "demo-pairs")
    with pytest.raises(InputError, match="STS-B not found"):
        load_task("stsb", 0, tmp_path)
