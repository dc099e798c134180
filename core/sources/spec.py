"""Where a space comes from: ``SpaceSpec``, one frozen dataclass for a model space, a vectors file or an
embeddings endpoint, and ``parse_space``, the one parser of SPEC strings (CLI ``--a`` / ``--b``).

SPEC strings are comma-separated ``key=value`` lists; every key is optional::

    model=...         empty (the embedded all-MiniLM-L6-v2), a local folder, a hub id,
                      landscape:FOLDER[:INIT[:EPOCH[:TASK]]]  a checkpoint of a loss-surface run, or
                      openai:NAME  an OpenAI-compatible embeddings endpoint (see base_url)
    init=pretrained   or random, random:SEED: the model's architecture with seeded random weights
    pooling=          any pooling mode, including layer:K (default: the model's, ``default_pooling``)
    calibrate=none    any calibrator (none, centre, flow, whitening, whitening:K, sn, abtt:D, sn+abtt:D), fitted
                      on the space's own vectors of the texts (no labels)
    vectors=FILE[:COLUMN]  vectors computed elsewhere (.npy, Parquet, Feather/Arrow, .safetensors, a datasets
                      folder; isoscope.data.vectors): the space is the file's rows (no model, init or pooling)
    text=COLUMN       with vectors=: the file's text column (default: text, sentence, ... when it has one)
    base_url=URL      with model=openai:NAME: the server (default: the command's --base-url, or OpenAI's)

e.g. ``pooling=cls,calibrate=whitening``, ``model=landscape:latest:pretrained:3``,
``vectors=openai.parquet:emb,calibrate=whitening`` or ``model=openai:nomic-embed-text,base_url=http://localhost:11434/v1``.
Values cannot contain commas. Parsing checks every value without loading anything (no model, no file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

from isoscope.encode.endpoints import ENDPOINT_PREFIX, check_base_url, is_endpoint_model
from isoscope.encode.pooling import PoolingSpec, parse_pooling
from isoscope.errors import InputError, first_line

SpecKey = Literal["model", "init", "pooling", "calibrate", "vectors", "text", "base_url"]
SPEC_KEYS: tuple[str, ...] = get_args(SpecKey)
SpaceKind = Literal["model", "vectors", "endpoint"]
Init = Literal["pretrained", "random"]
INITS: tuple[str, ...] = get_args(Init)
LANDSCAPE_PREFIX = "landscape:"
LANDSCAPE_INITS: tuple[str, ...] = ("pretrained", "scratch")
LANDSCAPE_TASKS: tuple[str, ...] = ("task1", "task2")


@dataclass(frozen=True)
class SpaceSpec:
    """Where a space comes from: a model (``model``, ``init``/``seed``, ``pooling``), a vectors file (``vectors``,
    ``column``, ``text_column``) or an endpoint (``model="openai:NAME"``, ``base_url``); then ``calibrate``.

    Positional order is kept from before vectors and endpoints existed (model, init, seed, pooling, calibrate).
    """

    model: str = ""
    init: str = "pretrained"
    seed: int = 0  # the random-init seed (init=random:SEED)
    pooling: PoolingSpec | None = None  # None: the model's default (``isoscope.encode.pooling.default_pooling``)
    calibrate: str = "none"
    vectors: str = ""  # a vectors file or folder: the space is its rows
    column: str | None = None  # its vector column (or tensor); None: the only one
    text_column: str | None = None  # its text column; None: text, sentence, ... when there is one
    base_url: str = ""  # openai:NAME only; "" = the caller's default (--base-url, or OpenAI's)

    @property
    def kind(self) -> SpaceKind:
        if self.vectors:
            return "vectors"
        return "endpoint" if is_endpoint_model(self.model) else "model"

    @property
    def has_model(self) -> bool:
        """True when the space comes from a model this process runs (layers, tokens and poolings exist)."""
        return self.kind == "model"

    def what(self) -> str:
        """The space in words, for a message: ``FILE holds vectors``, ``openai:NAME is an embeddings endpoint``, or
        the model's name."""
        if self.kind == "vectors":
            return f"{self.vectors_ref} holds vectors"
        return f"{self.model} is an embeddings endpoint" if self.kind == "endpoint" else self.model or "the model"

    @property
    def encoder_key(self) -> tuple[str | int, ...]:
        """Specs with the same key share one encoder and one forward pass (or one file, one endpoint)."""
        if self.kind == "vectors":
            return ("vectors", self.vectors, self.column or "", self.text_column or "")
        if self.kind == "endpoint":
            return ("endpoint", self.model, self.base_url)
        return (self.model, self.init, self.seed if self.init == "random" else 0)

    @property
    def vectors_ref(self) -> str:
        """``FILE`` or ``FILE:COLUMN``."""
        return f"{self.vectors}:{self.column}" if self.column else self.vectors

    def label(self) -> str:
        if self.kind == "vectors":
            text = f",text={self.text_column}" if self.text_column else ""
            return f"vectors={self.vectors_ref}{text},calibrate={self.calibrate}"
        if self.kind == "endpoint":
            url = f",base_url={self.base_url}" if self.base_url else ""
            return f"model={self.model}{url},calibrate={self.calibrate}"
        init = f"random:{self.seed}" if self.init == "random" and self.seed else self.init
        pooling = self.pooling.name if self.pooling is not None else "default"
        return f"model={self.model or 'default'},init={init},pooling={pooling},calibrate={self.calibrate}"


def _bad(text: str, what: str) -> InputError:
    return InputError(f"space '{text}': {what}; give key=value pairs separated by commas, keys {', '.join(SPEC_KEYS)}")


def _parse_init(text: str, value: str) -> tuple[str, int]:
    name, _, seed = value.partition(":")
    if name not in INITS or (seed and name != "random"):
        raise _bad(text, f"init must be one of {', '.join(INITS)} (or random:SEED), got '{value}'")
    if not seed:
        return name, 0
    if not re.fullmatch(r"\d+", seed):
        raise _bad(text, f"the seed in init=random:SEED must be a whole number >= 0, got '{seed}'")
    return name, int(seed)


def _values(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq:
            raise _bad(text, f"'{item}' is not key=value")
        if key not in SPEC_KEYS:
            raise _bad(text, f"unknown key '{key}'")
        if key in values:
            raise _bad(text, f"'{key}' is given twice")
        values[key] = value.strip()
    return values


def _check_kind(text: str, values: dict[str, str]) -> None:
    """Keys that belong to another kind of space are refused, naming the ones to drop."""
    if values.get("vectors"):
        extra = [k for k in ("model", "init", "pooling", "base_url") if k in values]
        if extra:
            raise _bad(
                text, f"vectors= is a space of its own (pooled already); drop {', '.join(k + '=' for k in extra)}"
            )
    elif "vectors" in values:
        raise _bad(text, "vectors= needs a file: vectors=FILE or vectors=FILE:COLUMN")
    elif "text" in values:
        raise _bad(text, "text= names the text column of a vectors= file")
    if is_endpoint_model(values.get("model")):
        extra = [k for k in ("init", "pooling") if k in values]
        if extra:
            raise _bad(text, f"{values['model']} is pooled by its server; drop {', '.join(k + '=' for k in extra)}")
        if not values["model"][len(ENDPOINT_PREFIX) :].strip():
            raise _bad(text, "give the endpoint's model: model=openai:NAME")
    elif "base_url" in values:
        raise _bad(text, "base_url= is for model=openai:NAME spaces")


def parse_space(text: str | None) -> SpaceSpec:
    """Parse a SPEC string (see the module docstring) and check its values without loading anything."""
    from isoscope.calibrate import make_calibrator

    text = (text or "").strip()
    values = _values(text)
    _check_kind(text, values)
    try:
        calibrate = make_calibrator(values.get("calibrate") or "none").method
    except ValueError as exc:
        raise InputError(f"space '{text}': {first_line(exc)}") from None
    if values.get("vectors"):
        from isoscope.data.vectors import parse_vectors_ref

        file, column = parse_vectors_ref(values["vectors"])
        return SpaceSpec(calibrate=calibrate, vectors=file, column=column, text_column=values.get("text") or None)
    init, seed = _parse_init(text, values.get("init") or "pretrained")
    model = values.get("model", "")
    if is_endpoint_model(model):
        base_url = check_base_url(values["base_url"]) if values.get("base_url") else ""
        return SpaceSpec(model, calibrate=calibrate, base_url=base_url)
    try:  # the model's own limits are checked once it is loaded
        pooling = parse_pooling(values["pooling"]) if values.get("pooling") else None
    except InputError as exc:
        raise InputError(f"space '{text}': {first_line(exc)}") from None
    spec = SpaceSpec(model, init, seed, pooling, calibrate)
    if spec.model.startswith(LANDSCAPE_PREFIX):
        parse_landscape_ref(spec.model)
        if init == "random":
            raise _bad(text, "init=random takes a model's architecture, not a landscape checkpoint (use its epoch 0)")
    return spec


@dataclass(frozen=True)
class LandscapeRef:
    folder: str  # experiment folder, its name under the landscape root, or "latest"
    init: str = "pretrained"
    epoch: int | None = None  # None = last
    task: str = "task1"


def parse_landscape_ref(model: str) -> LandscapeRef:
    """``landscape:FOLDER[:INIT[:EPOCH[:TASK]]]`` -> LandscapeRef (InputError listing the valid values)."""
    parts = model[len(LANDSCAPE_PREFIX) :].split(":")
    usage = "use landscape:FOLDER[:INIT[:EPOCH[:TASK]]], e.g. landscape:latest:pretrained:last:task1"
    if not parts[0] or len(parts) > 4:
        raise InputError(f"model '{model}': {usage}")
    init = parts[1] if len(parts) > 1 and parts[1] else "pretrained"
    epoch_text = parts[2] if len(parts) > 2 and parts[2] else "last"
    task = parts[3] if len(parts) > 3 and parts[3] else "task1"
    if init not in LANDSCAPE_INITS:
        raise InputError(f"model '{model}': INIT must be one of {', '.join(LANDSCAPE_INITS)}; {usage}")
    if task not in LANDSCAPE_TASKS:
        raise InputError(f"model '{model}': TASK must be one of {', '.join(LANDSCAPE_TASKS)}; {usage}")
    if epoch_text != "last" and not re.fullmatch(r"\d+", epoch_text):
        raise InputError(f"model '{model}': EPOCH must be a whole number or 'last'; {usage}")
    return LandscapeRef(parts[0], init, None if epoch_text == "last" else int(epoch_text), task)
