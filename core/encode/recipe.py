"""A model's own recipe: what its authors run after the transformer, read from sentence-transformers' files.

A sentence-transformers folder (or hub id) lists its modules in ``modules.json``: a ``Transformer``, then
``Pooling`` (cls, mean, max, mean_sqrt_len_tokens, weightedmean, lasttoken; ``include_prompt``), ``Dense``
(weights, bias, activation) and ``Normalize``; ``config_sentence_transformers.json`` holds its prompts
(``query``, ``document``, ...), ``default_prompt_name`` and ``similarity_fn_name``.

- ``read_card(folder)``: those files only, no model code run and no torch imported: the module list checked
  (a module that is not one of sentence-transformers' own classes is refused by name: a model's own code is
  never run), the prompts, the similarity. None for a bare transformers folder.
- ``load_recipe(source, card)``: the modules after the transformer, as sentence-transformers' own classes load
  them (``Pooling``, ``Dense``, ``Normalize``: no copy of their arithmetic here); ``Recipe.apply`` runs them on
  the transformer's token vectors. The pooling choice ``model`` is this recipe (``isoscope.encode.pooling``).
- ``resolve_prompt`` / ``prompt_length``: the prompt a run uses (a name from the card, or text) and how many of
  its tokens a ``Pooling`` with ``include_prompt=False`` leaves out, as sentence-transformers counts them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isoscope.data.jsonfile import check_json, read_json
from isoscope.data.limits import check_count
from isoscope.encode.recipe_check import (
    DENSE,
    ENDPOINT_ADVICE,
    HEAD_KINDS,
    NORMALIZE,
    POOLING,
    TRANSFORMER,
    HeadPlan,
    check_recipe,
)
from isoscope.errors import InputError, first_line
from isoscope.paths import NotRegularFile, inside, open_regular, regular_files

if TYPE_CHECKING:
    import torch

MODULES_FILE = "modules.json"
CARD_FILE = "config_sentence_transformers.json"
TRANSFORMER_FILE = "sentence_bert_config.json"  # the Transformer module's max_seq_length and do_lower_case
MAX_CARD_BYTES = 1 << 20  # modules.json and the card are a few hundred bytes; anything this big is not one


@dataclass(frozen=True)
class ModuleRef:
    """One entry of ``modules.json``: its position, class reference and folder (relative to the model's)."""

    idx: int
    kind: str  # Transformer, Pooling, Dense or Normalize
    type: str  # the class reference as written, e.g. sentence_transformers.models.Pooling
    path: str  # "" for the model's own folder


@dataclass(frozen=True)
class RecipeCard:
    """What a sentence-transformers folder says about itself, read without running anything."""

    folder: str  # where its files are (a local folder, or a hub model's snapshot)
    modules: tuple[ModuleRef, ...]
    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None
    similarity_fn_name: str | None = None
    max_seq_length: int | None = None  # the Transformer module's truncation (None: the tokenizer's own limit)
    do_lower_case: bool = False

    @property
    def transformer_path(self) -> str:
        """The folder (relative) of the transformer's weights and tokenizer."""
        return self.modules[0].path

    @property
    def head(self) -> tuple[ModuleRef, ...]:
        return self.modules[1:]


def _read_json(path: Path, expect: type = dict) -> Any:
    """A recipe file through the bounded JSON reader (``isoscope.data.jsonfile``): at most ``MAX_CARD_BYTES``,
    its depth counted before parsing, its top level ``expect``."""
    return read_json(path, what=str(path), expect=expect, max_bytes=MAX_CARD_BYTES, fix="save the model again")


def check_model_files(folder: str | Path, name: str | None = None) -> None:
    """Every file of a model's folder (not its sub-folders) is a regular file, checked before Isoscope or
    transformers, tokenizers, safetensors and sentence-transformers open any (``isoscope.paths.regular_files``):
    a FIFO would block the reader for ever, a link loop or a dangling link would be skipped as if absent.
    InputError naming the file otherwise."""
    folder = Path(folder)
    shown = name or folder.name
    try:
        regular_files(folder)
    except NotRegularFile as exc:
        where = Path(exc.filename).relative_to(folder) if exc.filename else "a file"
        raise InputError(f"'{shown}': {where} is a {exc.kind}, not a regular file; save the model again") from None
    except OSError as exc:  # a dangling link, no permission
        where = Path(exc.filename).name if exc.filename else "a file"
        raise InputError(f"'{shown}': {where} cannot be read ({exc.strerror}); save the model again") from None


def _kind(ref: str) -> str | None:
    """``Pooling`` for ``sentence_transformers.models.Pooling`` and every other spelling of sentence-transformers'
    own classes (``sentence_transformers.sentence_transformer.modules.pooling.Pooling``, ...); None for any other
    class (a model's own code)."""
    if not isinstance(ref, str) or not ref.startswith("sentence_transformers."):
        return None
    last = ref.rsplit(".", 1)[-1]
    return last if last in (TRANSFORMER, *HEAD_KINDS) else None


def _module_refs(folder: Path, entries: Any) -> tuple[ModuleRef, ...]:
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{folder / MODULES_FILE}: not a list of modules; save the model again")
    refs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise InputError(f"{folder / MODULES_FILE}: entry {i} names no module type; save the model again")
        kind = _kind(entry["type"])
        if kind is None:
            raise InputError(
                f"{folder.name}: module {i} of modules.json is '{entry['type'][:120]}', not one of "
                f"sentence-transformers' own {', '.join((TRANSFORMER, *HEAD_KINDS))}: Isoscope never runs a model's "
                f"own code; {ENDPOINT_ADVICE}"
            )
        path = entry.get("path") or ""
        if path:
            inside(folder, path, what=f"{folder / MODULES_FILE}: module {i}'s path")
        refs.append(ModuleRef(i, kind, entry["type"], path))
    if refs[0].kind != TRANSFORMER or any(r.kind == TRANSFORMER for r in refs[1:]):
        raise InputError(
            f"{folder.name}: modules.json starts with {refs[0].kind}; Isoscope runs recipes of one Transformer "
            f"followed by {', '.join(HEAD_KINDS)}; {ENDPOINT_ADVICE}"
        )
    return tuple(refs)


def read_card(folder: str | Path) -> RecipeCard | None:
    """The recipe a local sentence-transformers folder declares (module list, prompts, similarity), checked;
    None when the folder has no ``modules.json`` (a bare transformers folder)."""
    folder = Path(folder)
    check_model_files(folder)  # before any of its files is opened: a FIFO modules.json must not read as absent
    if not (folder / MODULES_FILE).is_file():
        return None
    modules = _module_refs(folder, _read_json(folder / MODULES_FILE, list))
    for ref in modules:
        if ref.path and (folder / ref.path).is_dir():
            check_model_files(folder / ref.path, f"{folder.name}/{ref.path}")
    card = _read_json(folder / CARD_FILE) if (folder / CARD_FILE).is_file() else {}
    for ref in modules[1:]:  # what sentence-transformers' own load parses: bounded here first
        if (folder / ref.path / "config.json").is_file():
            check_json(folder / ref.path / "config.json", max_bytes=MAX_CARD_BYTES, fix="save the model again")
    prompts = card.get("prompts") or {}
    if not isinstance(prompts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in prompts.items()):
        raise InputError(f"{folder / CARD_FILE}: prompts must map names to texts; save the model again")
    default = card.get("default_prompt_name")
    if default is not None and default not in prompts:
        raise InputError(f"{folder / CARD_FILE}: default_prompt_name '{default}' is not one of its prompts")
    similarity = card.get("similarity_fn_name")
    settings_file = folder / modules[0].path / TRANSFORMER_FILE
    settings = _read_json(settings_file) if settings_file.is_file() else {}
    max_seq = settings.get("max_seq_length")
    max_seq = max_seq if isinstance(max_seq, int) and not isinstance(max_seq, bool) and max_seq > 1 else None
    return RecipeCard(
        str(folder),
        modules,
        dict(prompts),
        default,
        similarity if isinstance(similarity, str) else None,
        max_seq,
        settings.get("do_lower_case") is True,
    )


def card_digest(folder: str | Path, card: RecipeCard) -> str:
    """Changes with the recipe: modules.json, the card and each head module's files (configs whole, weights by
    size and edges), so a cache entry of the pooling ``model`` follows its Dense weights."""
    folder = Path(folder)
    h = hashlib.sha256()
    for name in (MODULES_FILE, CARD_FILE):
        if (folder / name).is_file():
            h.update((folder / name).read_bytes())
    for ref in card.head:
        for path in sorted((folder / ref.path).glob("*")) if ref.path else []:
            if path.is_file():
                size = path.stat().st_size
                h.update(f"{ref.path}/{path.name}:{size}".encode())
                with open_regular(path) as f:
                    h.update(f.read(1 << 16))
                    f.seek(max(0, size - (1 << 16)))
                    h.update(f.read(1 << 16))
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- running it


@dataclass
class Recipe:
    """The modules after the transformer (sentence-transformers' own classes) and what they say about themselves."""

    card: RecipeCard
    modules: list[Any]  # torch modules: features dict -> features dict
    digest: str  # card_digest: names the pooling ``model``'s cache entries
    output_dim: int  # the sentence vector's dimensions after the last Dense

    def apply(self, token_embeddings: torch.Tensor, attention_mask: torch.Tensor, prompt_length: int = 0):
        """The sentence vectors (b, d_out) of token vectors (b, t, d) with their mask (b, t): each module in order,
        as ``SentenceTransformer.encode`` runs them (``prompt_length`` tokens left out where the pooling says so)."""
        features: dict[str, Any] = {"token_embeddings": token_embeddings, "attention_mask": attention_mask}
        if prompt_length:
            features["prompt_length"] = prompt_length
        for module in self.modules:
            features = module(features)
        return features["sentence_embedding"]  # (b, d_out)

    def describe(self) -> str:
        """The recipe in words: ``CLS -> Dense 768->512 (tanh) -> normalise``."""
        return " -> ".join(_describe(m) for m in self.modules)


def _describe(module: Any) -> str:
    kind = type(module).__name__
    if kind == POOLING:
        mode = getattr(module, "pooling_mode", None) or getattr(module, "get_pooling_mode_str", lambda: "?")()
        modes = "+".join(mode) if isinstance(mode, list | tuple) else str(mode)
        prompt = "" if getattr(module, "include_prompt", True) else ", prompt left out"
        return {"cls": "CLS", "lasttoken": "last token"}.get(modes, modes) + f" pooling{prompt}"
    if kind == DENSE:
        act = type(getattr(module, "activation_function", None)).__name__.lower()
        act = "" if act in ("identity", "nonetype") else f" ({act})"
        return f"Dense {module.in_features}->{module.out_features}{act}"
    if kind == NORMALIZE:
        return "normalise"
    return kind


def _head_class(kind: str) -> type:
    """sentence-transformers' own class of a head module (imported from its package, never from the model)."""
    import warnings

    with warnings.catch_warnings():  # sentence_transformers.models is deprecated in 6.x, the only path in 3-5
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import models

    return getattr(models, kind)


def module_configs(card: RecipeCard) -> list[Any]:
    """Each head module's parsed ``config.json`` (``{}`` where a module has none: a Normalize saved by
    sentence-transformers before 6), in the order of ``card.head``."""
    folder = Path(card.folder)
    return [
        _read_json(folder / ref.path / "config.json") if (folder / ref.path / "config.json").is_file() else {}
        for ref in card.head
    ]


def load_recipe(
    source: str, card: RecipeCard, *, local_files_only: bool, device: str = "cpu", hidden: int | None = None
) -> Recipe:
    """The head modules of ``card`` (a local folder: a hub model's snapshot, once fetched), checked as a whole
    first (``isoscope.encode.recipe_check.check_recipe``: keys, values, activations, the dimensions chained from
    ``hidden``, the transformer's hidden size, and a Dense's shapes against its weights file), then built:
    ``Pooling`` and ``Normalize`` with sentence-transformers' own ``load``, a ``Dense`` as sentence-transformers'
    class of the checked sizes with its activation from torch by name and its weights read with
    ``isoscope.paths.open_regular``. InputError naming the file when any of it is wrong, before anything is built."""
    plan = check_recipe(card, module_configs(card), hidden=hidden)
    modules = []
    for step in plan.modules:
        module = _dense(step) if step.ref.kind == DENSE else _load_module(source, step, local_files_only)
        module.eval().to(device)
        for p in module.parameters():
            p.requires_grad_(False)
        modules.append(module)
    digest = (
        card_digest(source, card) if Path(source).is_dir() else hashlib.sha256(repr(card).encode()).hexdigest()[:16]
    )
    return Recipe(card, modules, digest, plan.output_dim)


def _load_module(source: str, step: HeadPlan, local_files_only: bool) -> Any:
    """A Pooling or Normalize (no weights; its config checked) with sentence-transformers' own ``load``."""
    ref = step.ref
    try:
        module = _head_class(ref.kind).load(source, subfolder=ref.path, local_files_only=local_files_only)
    except TypeError:  # sentence-transformers before 6 loads a module from its own folder
        module = _head_class(ref.kind).load(str(Path(source) / ref.path))
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        raise InputError(
            f"{source}: its {ref.kind} module ({ref.path or 'root'}) cannot be read: {first_line(exc)}"
        ) from None
    if ref.kind == POOLING:
        got = getattr(module, "pooling_output_dimension", None) or module.get_sentence_embedding_dimension()
        if got != step.out_dim:  # the installed sentence-transformers reads the modes otherwise than checked
            raise InputError(f"{source}: its Pooling gives {got} dimensions, not the {step.out_dim} its config says")
    return module


def _dense(step: HeadPlan) -> Any:
    """sentence-transformers' ``Dense`` of the checked sizes, activation (torch's, by name) and weights."""
    import pickle

    import torch

    extra = {"use_residual": True} if step.config.get("use_residual") else {}
    assert step.weights is not None  # check_recipe found them
    label = "/".join(step.weights.parts[-3:])  # model/2_Dense/model.safetensors
    try:
        module = _head_class(DENSE)(
            step.in_dim,
            step.out_dim,
            bias=step.config.get("bias", True),
            activation_function=getattr(torch.nn, step.activation or "Identity")(),
            **extra,
        )
    except TypeError:
        raise InputError(f"{label}: use_residual needs sentence-transformers 6 or newer") from None
    try:
        with open_regular(step.weights) as f:
            if step.weights.suffix == ".safetensors":
                from safetensors.torch import load

                state = load(f.read())
            else:
                state = torch.load(f, map_location="cpu", weights_only=True)
        module.load_state_dict(state, strict=True)
    except (OSError, ValueError, RuntimeError, KeyError, pickle.UnpicklingError) as exc:
        raise InputError(f"{label} cannot be read: {first_line(exc, 160)}; save the model again") from None
    return module


# ---------------------------------------------------------------- prompts


def resolve_prompt(
    card: RecipeCard | None, name: str | None = None, text: str | None = None, *, model: str = ""
) -> str:
    """The prompt text a run prepends: ``text`` as given, else the card's prompt ``name``, else its
    ``default_prompt_name``'s, else none. InputError naming the prompts a model has for an unknown name, and for a
    prompt longer than ``isoscope.data.limits.COUNTS["prompt_chars"]`` (it is put before every text)."""
    if text is not None:
        return _checked_prompt(text, "the characters of the prompt text")
    prompts = card.prompts if card is not None else {}
    if name is None:
        name = card.default_prompt_name if card is not None else None
        if name is None:
            return ""
    if name not in prompts:
        have = ", ".join(sorted(prompts)) if prompts else "none"
        raise InputError(
            f"prompt '{name}': {model or 'the model'} has prompts: {have}; or give the text with --prompt-text"
        )
    return _checked_prompt(prompts[name], f"the characters of {model or 'the model'}'s prompt '{name}'")


def _checked_prompt(text: str, label: str) -> str:
    check_count("prompt_chars", len(text), label)
    return text


def prompt_length(tokenizer: Any, prompt: str, max_length: int | None = None) -> int:
    """Tokens of ``prompt`` at the start of a prompted text, as sentence-transformers counts them: the prompt
    tokenized alone (once), less a trailing special token (EOS, SEP) the tokenizer appends. With ``max_length``
    (the tokens a prompted text is cut to), InputError when the prompt with its special tokens fills it: no room
    would be left for the text, and every text would embed as the prompt alone."""
    if not prompt:
        return 0
    ids = tokenizer([prompt], truncation=False, padding=False)["input_ids"][0]
    if max_length is not None and len(ids) >= max_length:
        raise InputError(
            f"the prompt is {len(ids):,} tokens with the special tokens and a text is cut at {max_length:,}: no room "
            "is left for the text; shorten the prompt or raise --max-length (up to the model's limit)"
        )
    if ids and ids[-1] in set(getattr(tokenizer, "all_special_ids", ())):
        return len(ids) - 1
    return len(ids)
