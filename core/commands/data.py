"""``isoscope data stsb``: download a public benchmark the documentation's examples use (STS-B) into the user
cache (``isoscope.paths.user_stsb_dir``, where every STS-B example looks for it); refused in one line offline.
``isoscope data demo``: copy the demo files shipped inside the package into a folder (default: the current one),
where every command reads them by name (``isoscope sts --pairs demo_pairs.csv``)."""

from __future__ import annotations

import argparse

from isoscope.commands.common import add_json_argument, emit, hub_bars, output_from_args, progress_bar

# isoscope --help's line for this command, read from the file (isoscope.cli imports only the chosen command)
COMMAND = {
    "order": 150,
    "help": "the data the examples use: the demo files into a folder (isoscope data demo), STS-B downloaded (data stsb)",
}

DATASETS = ("stsb", "demo")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "dataset",
        choices=DATASETS,
        help="stsb: the STS Benchmark (English; 5,749 / 1,500 / 1,379 pairs), downloaded; demo: the demo files "
        "shipped with Isoscope (demo_corpus.csv, demo_pairs.csv, demo_retrieval/), copied",
    )
    p.add_argument(
        "--out",
        default=None,
        help="folder to write it to (stsb: ISOSCOPE_STSB_DIR when set, else ISOSCOPE_CACHE/data/stsb, "
        "~/.cache/isoscope/data/stsb; demo: the current folder)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress (the download's, nor huggingface_hub's)")
    add_json_argument(p)


def run(args: argparse.Namespace) -> dict:
    return _demo(args) if args.dataset == "demo" else _stsb(args)


def _stsb(args: argparse.Namespace) -> dict:
    import os
    from pathlib import Path

    from isoscope.data.benchmarks import fetch_stsb, stsb_present
    from isoscope.data.outputs import STSB_FOLDER
    from isoscope.paths import ENV_STSB_DIR, STSB_FILES, user_stsb_dir

    dest = Path(args.out or os.environ.get(ENV_STSB_DIR) or user_stsb_dir()).expanduser()
    output_from_args(args, str(dest), STSB_FOLDER, option="--out" if args.out else "the STS-B folder")
    had = stsb_present(dest)
    with hub_bars(args):
        folder = fetch_stsb(dest, progress=progress_bar(args, "download STS-B", unit="split"))
    files = [str(folder / name) for name in STSB_FILES]
    result = {"dataset": args.dataset, "folder": str(folder), "files": files, "downloaded": not had}
    said = "already there" if had else "downloaded"
    emit(args, result, [f"STS-B {said}: {folder}", *files])
    return result


def _demo(args: argparse.Namespace) -> dict:
    from pathlib import Path

    from isoscope.data.demo import write_demo

    folder = Path(args.out or ".").expanduser().resolve()
    written, kept = write_demo(folder)
    files = sorted(written + kept)
    result = {"dataset": args.dataset, "folder": str(folder), "files": [str(p) for p in files], "written": len(written)}
    said = f"{len(written)} written" + (f", {len(kept)} already there" if kept else "")
    lines = [f"the demo's files in {folder} ({said}):", *(f"  {p.relative_to(folder)}" for p in files)]
    lines.append("then: isoscope sts --pairs demo_pairs.csv, --input demo_corpus.csv, retrieval --beir demo_retrieval")
    emit(args, result, lines)
    return result
