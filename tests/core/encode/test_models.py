"""Encoder loading: the offline default, local folders, hub ids while offline, and no remote code."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from isoscope.encode.embed import encode
from isoscope.encode.models import DEFAULT_MODEL_NAME, default_model_path, load_encoder
from isoscope.errors import InputError
from tests.conftest import ROOT
from tests.tiny_models import tiny_bert

CORE_DIR = ROOT / "core"


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A random 2-layer BERT (hidden 32) saved with save_pretrained, plus the real MiniLM tokenizer."""
    path = tmp_path_factory.mktemp("tiny_bert")
    tiny = tiny_bert(0)
    tiny.model.save_pretrained(path)
    tiny.tokenizer.save_pretrained(path)
    return path


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert msg and "\n" not in msg
    return msg


def test_default_loads_offline(encoder) -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert encoder.name == DEFAULT_MODEL_NAME
    assert (encoder.hidden_size, encoder.num_layers, encoder.is_encoder_decoder) == (384, 6, False)
    assert type(encoder.model).__name__ == "BertModel"
    assert not encoder.model.training
    assert not any(p.requires_grad for p in encoder.model.parameters())
    assert encoder.tokenizer("hello world")["input_ids"] == [101, 7592, 2088, 102]
    assert re.fullmatch(r"[0-9a-f]{16}", encoder.fingerprint)


def test_fingerprint_stable_across_loads_and_aliases(encoder) -> None:
    again = load_encoder("sentence-transformers/all-MiniLM-L6-v2")  # alias of the embedded default
    assert again.name == DEFAULT_MODEL_NAME
    assert again.fingerprint == encoder.fingerprint
    a = encoder.model.embeddings.word_embeddings.weight
    assert torch.equal(a, again.model.embeddings.word_embeddings.weight)


def test_tiny_bert_dir_loads(tiny_bert_dir: Path, encoder) -> None:
    tiny = load_encoder(str(tiny_bert_dir))
    assert (tiny.hidden_size, tiny.num_layers, tiny.is_encoder_decoder) == (32, 2, False)
    assert tiny.name == str(tiny_bert_dir)
    assert tiny.fingerprint != encoder.fingerprint
    assert tiny.fingerprint == load_encoder(str(tiny_bert_dir)).fingerprint
    vecs = encode(tiny, ["a short sentence", "another one"])
    assert vecs.shape == (2, 32) and vecs.dtype == np.float32 and np.isfinite(vecs).all()


def test_fingerprint_follows_the_weights(tiny_bert_dir: Path, tmp_path: Path) -> None:
    """Same config, different weights in another folder: a different fingerprint."""
    other = tmp_path / "other"
    tiny_bert(1).model.save_pretrained(other)
    for f in tiny_bert_dir.iterdir():
        if "token" in f.name or f.name == "vocab.txt":
            (other / f.name).write_bytes(f.read_bytes())
    assert (other / "config.json").read_bytes() == (tiny_bert_dir / "config.json").read_bytes()
    assert load_encoder(str(other)).fingerprint != load_encoder(str(tiny_bert_dir)).fingerprint


def test_tilde_and_whitespace_in_path(tiny_bert_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tiny_bert_dir.parent))
    assert load_encoder(f"  ~/{tiny_bert_dir.name}  ").hidden_size == 32


@pytest.mark.parametrize("path", ["/definitely/not/here", "./no_such_model_dir", "~/no/such/model/dir"])
def test_missing_path_is_one_line_input_error(path: str) -> None:
    with pytest.raises(InputError) as info:
        load_encoder(path)
    msg = _one_line(info)
    assert "does not exist" in msg and path in msg


def test_folder_without_config(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(InputError) as info:
        load_encoder(str(tmp_path))
    assert "config.json" in _one_line(info)


def test_file_instead_of_folder(tmp_path: Path) -> None:
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"x")
    with pytest.raises(InputError) as info:
        load_encoder(str(f))
    assert "not a model directory" in _one_line(info)


def test_broken_config_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InputError) as info:
        load_encoder(str(tmp_path))
    assert str(tmp_path) in _one_line(info)


def test_folder_without_tokenizer(tmp_path: Path) -> None:
    tiny_bert().model.save_pretrained(tmp_path)
    with pytest.raises(InputError) as info:
        load_encoder(str(tmp_path))
    assert "tokenizer" in _one_line(info)


def test_unknown_architecture_message_is_short(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"hidden_size": 8}')  # no model_type
    with pytest.raises(InputError) as info:
        load_encoder(str(tmp_path))
    assert len(_one_line(info)) < 500


@pytest.mark.parametrize("hub_id", ["bert-base-uncased", "some-org/some-model-that-does-not-exist"])
def test_hub_id_offline_names_the_embedded_default(hub_id: str) -> None:
    import huggingface_hub.constants

    assert huggingface_hub.constants.HF_HUB_OFFLINE
    with pytest.raises(InputError) as info:
        load_encoder(hub_id)
    msg = _one_line(info)
    assert hub_id in msg and "all-MiniLM-L6-v2" in msg and "empty" in msg


# ---------------------------------------------------------------- no remote code


def test_trust_remote_code_is_never_true_in_core() -> None:
    hits = []
    for py in CORE_DIR.rglob("*.py"):
        for n, line in enumerate(py.read_text().splitlines(), 1):
            if "trust_remote_code" in line:
                hits.append((py.name, n, line))
                assert re.search(r"trust_remote_code\s*=\s*False", line) or line.lstrip().startswith(("#", '"', "`")), (
                    f"{py}:{n}: {line.strip()}"
                )
            assert not re.search(r"trust_remote_code\s*=\s*(True|1)\b", line), f"{py}:{n}"
    assert hits, "load_encoder should pass trust_remote_code=False explicitly"


def test_remote_code_in_a_model_folder_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "EXECUTED"
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "isoscope_evil",
                "auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"},
            }
        )
    )
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    with pytest.raises(InputError) as info:
        load_encoder(str(tmp_path))
    _one_line(info)
    assert not marker.exists()


def test_from_pretrained_calls_pass_trust_remote_code_false(tiny_bert_dir: Path, monkeypatch) -> None:
    """Record the keyword each Auto* loader receives (the real loaders still run)."""
    seen: list[tuple[str, object]] = []
    for cls in (transformers.AutoConfig, transformers.AutoTokenizer, transformers.AutoModel):
        real = cls.from_pretrained.__func__

        def spy(klass, *args, _real=real, _name=cls.__name__, **kwargs):
            seen.append((_name, kwargs.get("trust_remote_code", "missing")))
            return _real(klass, *args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    load_encoder(str(tiny_bert_dir))
    assert {name for name, _ in seen} >= {"AutoConfig", "AutoTokenizer", "AutoModel"}
    assert all(value is False for _, value in seen), seen


# ---------------------------------------------------------------- in-memory models


def test_encoder_from_model() -> None:
    a, b = tiny_bert(0), tiny_bert(1)  # tiny_bert wraps its model with encoder_from_model
    assert not a.model.training
    assert (a.hidden_size, a.num_layers) == (32, 2)
    assert a.fingerprint != b.fingerprint


def test_default_model_path_has_weights() -> None:
    path = Path(default_model_path())
    assert (path / "config.json").exists() and (path / "model.safetensors").exists()
