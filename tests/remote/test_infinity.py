"""``make test-remote``: the embeddings client against a real server that speaks OpenAI's protocol.

infinity-emb (its own venv, ``.venv-remote``, from ``requirements-remote.txt``: it pins numpy<2) serves the
embedded model's folder on 127.0.0.1; ``isoscope geometry`` and ``compare`` then run on ``--model openai:NAME``
and are checked against the model run in this process. Collected only when ``ISOSCOPE_TEST_REMOTE`` names the
server's executable (``tests/conftest.py``), so ``make test`` never starts it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from isoscope.encode.embed import encode
from isoscope.encode.endpoints import Endpoint
from isoscope.encode.models import default_model_path
from isoscope.encode.remote import EndpointCache, embed_endpoint
from isoscope.paths import DEMO_PAIRS

SERVED = "minilm"
STARTUP_SECONDS = 600  # loading torch and the model on a busy 2-core machine took 104 s here
KEY_ENV = "ISOSCOPE_REMOTE_TEST_KEY"
KEY = "isoscope-test-key-not-a-secret"  # the server is started with --api-key: it refuses requests without it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """infinity_emb serving the embedded model folder; yields its base URL (…/v1)."""
    exe = os.environ["ISOSCOPE_TEST_REMOTE"]
    port = _free_port()
    log = tmp_path_factory.mktemp("infinity") / "server.log"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "INFINITY_ANONYMOUS_USAGE_STATS": "0",
        "DO_NOT_TRACK": "1",
        "OMP_NUM_THREADS": "1",
    }
    os.environ[KEY_ENV] = KEY
    cmd = [
        exe, "v2", "--model-id", default_model_path(), "--served-model-name", SERVED, "--engine", "torch",
        "--device", "cpu", "--dtype", "float32", "--no-trust-remote-code", "--no-vector-disk-cache",
        "--no-bettertransformer", "--no-model-warmup", "--port", str(port), "--host", "127.0.0.1",
        "--url-prefix", "/v1", "--api-key", KEY, "--batch-size", "32",
    ]  # fmt: skip
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"infinity_emb exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                request = urllib.request.Request(f"{url}/models", headers={"Authorization": f"Bearer {KEY}"})
                with urllib.request.urlopen(request, timeout=2) as r:
                    if SERVED in r.read().decode():
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"infinity_emb did not answer in {STARTUP_SECONDS} s:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _cosines(X: np.ndarray) -> np.ndarray:
    Xn = X.astype(np.float64) / np.linalg.norm(X.astype(np.float64), axis=1, keepdims=True)
    return Xn @ Xn.T


def test_the_server_s_vectors_are_the_model_s(server, encoder, tmp_path: Path) -> None:
    """The served all-MiniLM-L6-v2 (sentence-transformers: mean pooling, then unit length) against ours (mean
    pooling): the same directions, so every cosine agrees to float32 round-off of a 384-term dot product."""
    from isoscope.data import load_pairs

    texts = load_pairs(DEMO_PAIRS).texts
    endpoint = Endpoint(SERVED, server, KEY_ENV, batch_size=16)
    cache = EndpointCache(tmp_path / "endpoints.sqlite")
    remote = embed_endpoint(endpoint, texts, cache=cache)  # (n, 384)
    local = encode(encoder, texts, "mean")
    assert remote.shape == local.shape
    tol = 1e-5  # float32 forward passes of two processes (other batch shapes, other kernels): not bit-identical
    np.testing.assert_allclose(_cosines(remote), _cosines(local), atol=tol)
    again = embed_endpoint(endpoint, texts, cache=cache, environ={})  # from the cache: no key needed, none sent
    np.testing.assert_array_equal(again, remote)
    assert KEY.encode() not in (tmp_path / "endpoints.sqlite").read_bytes()


def test_the_server_refuses_a_wrong_key(server) -> None:
    from isoscope.errors import InputError

    endpoint = Endpoint(SERVED, server, KEY_ENV)
    with pytest.raises(InputError) as err:
        embed_endpoint(endpoint, ["a text"], environ={KEY_ENV: "wrong-key"})
    assert "refused the request (401" in str(err.value) and "wrong-key" not in str(err.value)


def test_geometry_and_compare_through_the_server(server, encoder, cli_main, capsys, tmp_path: Path) -> None:
    from isoscope.data import load_pairs

    texts = list(dict.fromkeys(load_pairs(DEMO_PAIRS).texts))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts))
    remote = ["--model", f"openai:{SERVED}", "--base-url", server, "--api-key-env", KEY_ENV]
    assert cli_main(["geometry", "--input", str(corpus), *remote, "--calibrate", "whitening", "--quiet", "--json"]) == 0
    geo = json.loads(capsys.readouterr().out)
    assert geo["model"].startswith(f"openai:{SERVED} at 127.0.0.1") and geo["n_texts"] == len(texts)
    assert geo["calibrated"]["avg_cosine"] < geo["raw"]["avg_cosine"]
    # the server's space against ours made unit length (what sentence-transformers serves): the same space, so
    # CKA is 1 up to float32 round-off (1e-5 per cosine, above) and the neighbours agree up to near-ties
    local = encode(encoder, texts, "mean").astype(np.float64)  # (n, 384)
    np.save(tmp_path / "local.npy", (local / np.linalg.norm(local, axis=1, keepdims=True)).astype(np.float32))
    spec = f"model=openai:{SERVED},base_url={server}"
    argv = ["compare", "--input", str(corpus), "--a", spec, "--b", f"vectors={tmp_path / 'local.npy'}", "--k", "5"]
    assert cli_main([*argv, "--api-key-env", KEY_ENV, "--quiet", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cka_linear"] == pytest.approx(1.0, abs=1e-4)
    assert out["overlap_at_k"] > 0.95
