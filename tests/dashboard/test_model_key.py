"""dashboard/services/models.py: the sidebar's model is one typed key (``ModelKey``), hashed by Streamlit's caches by
value, never a string taken apart again. Read from the source: no regular expression or string split reads a model
key anywhere in dashboard/, and every service's ``model`` is a ``ModelKey``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import streamlit as st

from isoscope.cache import make_key
from isoscope.dashboard.services.embeddings import vectors_key
from isoscope.dashboard.services.keyed import texts
from isoscope.dashboard.services.models import ModelKey
from isoscope.errors import InputError

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
# the modules that may use regular expressions, and what for: none of them reads a model key
REGEX_USERS = {
    "classroom/session.py": "server paths removed from messages",
    "text.py": "Markdown's special characters escaped",
    "tiles.py": "a tile's coordinates in its URL",
}
RE_CALLS = {"compile", "match", "fullmatch", "search", "findall", "finditer", "split", "sub", "subn"}
KEY_WORDS = ("int8", "fp32", "cuda", "mps", "float16", "bfloat16", "@")
KEY_SEPARATORS = {"@", "+", ":", "int8:"}  # what the keys' strings were built from


def _modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(DASHBOARD)): ast.parse(p.read_text(), str(p)) for p in sorted(DASHBOARD.rglob("*.py"))}


def _imports_re(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "re" or a.name.startswith("re.") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "re":
            return True
    return False


def test_no_regular_expression_reads_a_model_key() -> None:
    modules = _modules()
    assert len(modules) > 50 and "services/models.py" in modules  # the walk sees the package
    users = {name for name, tree in modules.items() if _imports_re(tree)}
    assert users <= set(REGEX_USERS), f"a regular expression in {sorted(users - set(REGEX_USERS))}: keys are typed"
    for name in users:
        for node in ast.walk(modules[name]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RE_CALLS:
                pattern = node.args[0] if node.args else None
                if isinstance(pattern, ast.Constant) and isinstance(pattern.value, str):
                    assert not any(w in pattern.value for w in KEY_WORDS), f"{name}: {pattern.value}"


def test_no_string_is_split_where_a_key_was() -> None:
    """No ``split``/``partition``/``startswith``/``removeprefix`` by a key's separators, and ``int8:`` written once
    (``ModelKey.__str__``): a model key is never rebuilt from its string. figures/ draws what it is given and never
    sees a key (a rank change's ``+``: not a key's)."""
    int8_literals = []
    for name, tree in _modules().items():
        if name.startswith("figures/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == "int8:":
                int8_literals.append(name)
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr in {"split", "rsplit", "partition", "rpartition", "startswith", "removeprefix"}:
                args = [a.value for a in node.args if isinstance(a, ast.Constant)]
                assert not (set(args) & KEY_SEPARATORS), f"{name}:{node.lineno}: {ast.unparse(node)}"
    assert int8_literals == ["services/models.py"]


def test_every_service_takes_the_typed_key() -> None:
    """A parameter named ``model`` in services/ and ui/ is a ``ModelKey`` (or None where a vectors file has none)."""
    seen = 0
    for name, tree in _modules().items():
        if not name.startswith(("services/", "ui/")):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    if arg.arg == "model":
                        seen += 1
                        hint = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                        assert hint.removeprefix("models.") in {"ModelKey", "ModelKey | None"}, (
                            f"{name}:{node.lineno} {node.name}({arg.arg}: {hint})"
                        )
    assert seen > 30  # embeddings, costs, anatomy, compare, ... : the walk found them


def test_a_key_is_normalised_and_refuses_what_the_sidebar_never_offers() -> None:
    assert ModelKey("m", " FP32 ", " CUDA:1 ", "bf16") == ModelKey("m", "fp32", "cuda:1", "bfloat16")
    assert ModelKey("m", device="auto", dtype="float16") == ModelKey("m")  # auto and the CPU run float32
    for bad in ({"precision": "int4"}, {"device": "tpu"}, {"device": "cuda:0", "dtype": "float64"}):
        with pytest.raises(InputError):
            ModelKey("m", **bad)
    with pytest.raises(AttributeError):  # frozen: a key in a cache never changes
        ModelKey("m").name = "other"  # type: ignore[misc]


def test_the_arrays_keep_the_keys_written_before_the_key_was_typed() -> None:
    """``vectors_key`` (and so every calibrator kept on disk under its fit's key) is the one the string key gave:
    ``make_key`` of ``int8:`` + ``DEVICE[+DTYPE]@`` + the name, as the sidebar wrote it."""
    items = texts(["a", "b"])
    before = {
        ModelKey(): "",
        ModelKey("org/name", "int8"): "int8:org/name",
        ModelKey("org/name", "fp32", "cuda:0"): "cuda:0@org/name",
        ModelKey("/m", "fp32", "mps", "float16"): "mps+float16@/m",
        ModelKey("org/name", "int8", "cuda:1", "bfloat16"): "int8:cuda:1+bfloat16@org/name",
    }
    for key, string in before.items():
        assert vectors_key(key, "mean", 128, items) == make_key("emb", string, "mean", 128, items.key)
    assert len({vectors_key(k, "mean", 128, items) for k in before}) == len(before)


def test_streamlit_caches_load_once_per_distinct_key() -> None:
    """Both caches hash the frozen key by its fields: an equal key (built apart) is a hit, any field that differs
    is another entry, as a distinct string was."""
    calls: list[ModelKey] = []

    @st.cache_resource(show_spinner=False)
    def resource(key: ModelKey) -> int:
        calls.append(key)
        return len(calls)

    @st.cache_data(show_spinner=False)
    def data(key: ModelKey) -> int:
        calls.append(key)
        return len(calls)

    keys = [
        ModelKey("m"),
        ModelKey("m", "int8"),
        ModelKey("m", "fp32", "cuda:0"),
        ModelKey("m", "fp32", "cuda:0", "float16"),
    ]
    for cached in (resource, data):
        calls.clear()
        first = [cached(k) for k in keys]
        again = [cached(ModelKey(k.name, k.precision, k.device, k.dtype)) for k in keys]
        assert first == again == [1, 2, 3, 4] and calls == keys
        assert cached(ModelKey("m", device="cpu", dtype="bfloat16")) == 1  # normalised: the CPU's float32 key
