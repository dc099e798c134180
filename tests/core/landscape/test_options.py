"""isoscope.landscape.options: the command line builds its parser from these without importing torch."""

from __future__ import annotations

import subprocess
import sys

from isoscope.landscape import options


def test_options_import_without_torch(repo_root):
    code = (
        "import sys; import isoscope.landscape.options, isoscope.commands.landscape; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_second_task_differs_from_the_first():
    for task in options.BUILTIN_TASKS:
        assert options.default_task2(task) != task
    assert options.default_task2("my_file.csv") == "demo-topic"
    assert set(options.DIRECTIONS) == {"task", "filter", "both"} and options.INITS == ("pretrained", "scratch")
