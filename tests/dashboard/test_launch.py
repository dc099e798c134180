"""``isoscope.dashboard.launch``: the server's command line and environment, built without streamlit.

The command's end-to-end behaviour (``isoscope app --dry-run``, a real classroom server) is in
tests/core/commands/test_app.py; these check the contract both sides read.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from isoscope.dashboard import launch
from isoscope.dashboard.launch import (
    CLASSROOM_MAX_ROWS,
    CLASSROOM_UPLOAD_MB,
    CODE_ALPHABET,
    ENV_CLASSROOM,
    ENV_CODE_HASH,
    ENV_DATA_FILE,
    ENV_DATA_KIND,
    ENV_MAX_BYTES,
    ENV_MAX_ROWS,
    ENV_MODELS,
    ENV_TEXT_COLUMN,
    ENV_VECTOR_COLUMN,
    Launch,
    ServerOptions,
    code_hash,
    prepare,
)
from isoscope.data.limits import ENV_VARS
from isoscope.encode.models import default_model_path
from isoscope.errors import InputError


def _option(command: list[str], name: str) -> str:
    assert command.count(name) == 1, name
    return command[command.index(name) + 1]


def test_importing_launch_imports_no_streamlit_nor_pandas(tmp_path: Path) -> None:
    code = "import sys, isoscope.dashboard.launch; print(sorted({'streamlit', 'pandas', 'torch'} & set(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_default_launch_is_local_with_config_toml_and_no_extra_environment() -> None:
    plan = prepare(ServerOptions(), environ={})
    assert plan.command[1:4] == ["-m", "streamlit", "run"] and plan.command[4].endswith("dashboard/serve.py")
    assert _option(plan.command, "--server.address") == "127.0.0.1" and _option(plan.command, "--server.port") == "8501"
    assert _option(plan.command, "--server.maxUploadSize") == str(launch.DEFAULT_UPLOAD_MB)  # config.toml's
    assert _option(plan.command, "--server.headless") == "true"
    assert plan.env == {} and plan.access_code is None and plan.url() == "http://localhost:8501"


def test_classroom_launch_gives_the_server_a_hash_and_lower_limits() -> None:
    plan = prepare(ServerOptions(classroom=True, access_code="abc-DEF-12"), environ={})
    assert plan.command[4].endswith("dashboard/serve.py") and plan.host == "0.0.0.0"
    assert _option(plan.command, "--server.maxUploadSize") == str(CLASSROOM_UPLOAD_MB)
    assert _option(plan.command, "--client.showErrorDetails") == "none"
    assert plan.env == {
        ENV_MAX_BYTES: str(CLASSROOM_UPLOAD_MB * 2**20),
        ENV_MAX_ROWS: str(CLASSROOM_MAX_ROWS),
        ENV_CLASSROOM: "1",
        ENV_CODE_HASH: code_hash("ABCDEF12"),
        ENV_MODELS: "[]",
    }
    assert plan.access_code == "abc-DEF-12" and "abc-DEF-12" not in json.dumps(plan.env)


def test_the_access_code_comes_from_the_option_the_environment_or_chance() -> None:
    assert prepare(ServerOptions(classroom=True), environ={"ISOSCOPE_ACCESS_CODE": "from-env-9"}).access_code == (
        "from-env-9"
    )
    codes = {prepare(ServerOptions(classroom=True), environ={}).access_code for _ in range(20)}
    assert len(codes) == 20  # 40 random bits each
    for code in codes:
        assert len(code) == 9 and code[4] == "-" and set(code.replace("-", "")) <= set(CODE_ALPHABET)


def test_code_hash_ignores_case_spaces_and_dashes() -> None:
    assert code_hash("k7qm-3xhd") == code_hash("K7QM 3XHD") == code_hash("K7QM3XHD")
    assert code_hash("K7QM3XHD") != code_hash("K7QM3XHE")


def test_env_names_match_what_the_server_reads() -> None:
    from isoscope.data import DecodeLimits

    assert ENV_VARS["max_bytes"] == ENV_MAX_BYTES and ENV_VARS["max_rows"] == ENV_MAX_ROWS
    env = launch.limits_environment(ServerOptions(max_upload_mb=3, max_rows=70))
    assert DecodeLimits.from_env(env).replace() == DecodeLimits(max_bytes=3 * 2**20, max_rows=70)
    assert (ENV_DATA_FILE, ENV_TEXT_COLUMN) == ("ISOSCOPE_DATA_FILE", "ISOSCOPE_TEXT_COLUMN")


def test_the_data_file_is_checked_under_the_servers_limits(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("one\ntwo\nthree\n")
    plan = prepare(ServerOptions(data_file=str(corpus)), environ={})
    assert plan.env == {ENV_DATA_FILE: str(corpus.resolve()), ENV_DATA_KIND: "corpus"}
    with pytest.raises(InputError, match="over the limit"):
        prepare(ServerOptions(data_file=str(corpus), max_rows=2), environ={})
    with pytest.raises(InputError, match="over the limit"):  # the environment the server will run with counts
        prepare(ServerOptions(data_file=str(corpus)), environ={"ISOSCOPE_MAX_ROWS": "2"})


def test_allowed_models_are_model_folders_labelled_by_name(tmp_path: Path) -> None:
    model = default_model_path()
    for parent in ("a", "b"):
        (tmp_path / parent / "m").mkdir(parents=True)
        (tmp_path / parent / "m" / "config.json").write_text("{}")
    got = launch.allowed_models([model, str(tmp_path / "a" / "m"), str(tmp_path / "b" / "m")])
    assert got == [
        [Path(model).name, str(Path(model).resolve())],
        ["m", str(tmp_path / "a" / "m")],
        ["b/m", str(tmp_path / "b" / "m")],  # a second folder of the same name: its parent's name too
    ]
    with pytest.raises(InputError, match="not a model folder"):
        launch.allowed_models([str(tmp_path)])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ServerOptions(access_code="abcdefgh"), "need --classroom"),
        (ServerOptions(allow_models=("/etc",)), "need --classroom"),
        (ServerOptions(classroom=True, access_code="ab-c"), "at least 6"),
        (ServerOptions(text_column="body"), "--text-column needs a DATA_FILE"),
    ],
)
def test_bad_options_are_input_errors(options: ServerOptions, message: str) -> None:
    with pytest.raises(InputError, match=message):
        prepare(options, environ={})


def test_url_names_the_host_to_open() -> None:
    assert Launch([], host="10.1.2.3", port=9000).url() == "http://10.1.2.3:9000"
    assert Launch([], host="0.0.0.0", port=80).url() == f"http://{launch.lan_address()}:80"


def test_a_pairs_file_and_a_vectors_file_are_launched_as_what_they_hold(tmp_path: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    pairs = tmp_path / "p.csv"
    pairs.write_text("sentence1,sentence2,score\na cat,a dog,2\na car,a bus,3\nrain,snow,1\n")
    assert prepare(ServerOptions(data_file=str(pairs)), environ={}).env[ENV_DATA_KIND] == "pairs"
    vectors = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    emb = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 3)
    both = pa.table({"emb": emb, "other": emb, "text": ["a", "b", "c", "d"]})
    pq.write_table(both, tmp_path / "v.parquet")
    plan = prepare(ServerOptions(data_file=str(tmp_path / "v.parquet"), vector_column="emb", text_column="text"), {})
    assert plan.env[ENV_DATA_KIND] == "vectors"
    assert (plan.env[ENV_VECTOR_COLUMN], plan.env[ENV_TEXT_COLUMN]) == ("emb", "text")
    # a Parquet file with list columns is a vectors file; which column must then be said, in one line
    with pytest.raises(InputError, match="several vector columns") as err:
        prepare(ServerOptions(data_file=str(tmp_path / "v.parquet")), environ={})
    assert "\n" not in str(err.value)
    np.save(tmp_path / "v.npy", vectors)
    assert prepare(ServerOptions(data_file=str(tmp_path / "v.npy")), environ={}).env[ENV_DATA_KIND] == "vectors"
    with pytest.raises(InputError, match="over the limit"):  # under the server's limits, like a corpus
        prepare(ServerOptions(data_file=str(tmp_path / "v.npy"), max_rows=2), environ={})
    with pytest.raises(InputError, match="--vector-column needs a DATA_FILE"):
        prepare(ServerOptions(vector_column="emb"), environ={})
    with pytest.raises(InputError, match="not found"):
        prepare(ServerOptions(data_file=str(tmp_path / "missing.parquet")), environ={})


def test_an_atlas_folder_is_launched_for_the_atlas_page(tmp_path: Path) -> None:
    """``isoscope app my-atlas/``: a finished atlas folder goes to the Atlas page (ISOSCOPE_ATLAS_DIR); a folder
    that is no atlas, an unfinished one, or column options with it, in one line."""
    from isoscope.atlas.synthetic import synthetic_atlas

    folder, _ = synthetic_atlas(tmp_path / "my-atlas", 300, calibrate="none")
    plan = prepare(ServerOptions(data_file=str(folder)), environ={})
    assert plan.env == {launch.ENV_ATLAS_DIR: str(folder.resolve())} and launch.ENV_ATLAS_DIR == "ISOSCOPE_ATLAS_DIR"
    with pytest.raises(InputError, match="do not apply") as err:
        prepare(ServerOptions(data_file=str(folder), text_column="text"), environ={})
    assert "\n" not in str(err.value)
    (folder / "raw" / "xy.npy").unlink()  # a build stopped half way
    with pytest.raises(InputError, match="unfinished atlas: rerun"):
        prepare(ServerOptions(data_file=str(folder)), environ={})
