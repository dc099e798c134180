"""The landscape's option tuples, importable without torch (the command line builds its parser from them)."""

from __future__ import annotations

from typing import Literal

Init = Literal["pretrained", "scratch"]
INITS: tuple[str, ...] = ("pretrained", "scratch")
HeadPooling = Literal["mean", "cls"]
HEAD_POOLINGS: tuple[str, ...] = ("mean", "cls")
Directions = Literal["task", "filter", "both"]
DIRECTIONS: tuple[str, ...] = ("task", "filter", "both")
BUILTIN_TASKS: tuple[str, ...] = ("stsb", "demo-topic", "demo-pairs")


def default_task2(task: str) -> str:
    """A second task different from the first, for the second axis."""
    return "demo-pairs" if task == "demo-topic" else "demo-topic"
