"""`fedbench data ls` and `fedbench data prepare NAME`: where each dataset is, and getting it ready."""

from __future__ import annotations

import time
from pathlib import Path

import click

from benchmark.cli_options import SEED, Amount
from benchmark.data.archive import ARCHIVE_SUFFIXES, Found, dataset_missing, peek_archives, root_text
from benchmark.data.download import download
from benchmark.data.source import DATA_ENV, DATASETS, DatasetSpec, data_root, load_dataset
from benchmark.errors import DatasetMissing, UserError


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return ""


def _root(root: Path | None) -> Path | None:
    return root if root is not None else data_root(None)


@click.group("data")
def data() -> None:
    """List the datasets fedbench knows and where their files are; download or build them."""


@data.command("ls")
@click.option("--root", type=click.Path(path_type=Path), default=None, help=f"data root (default ${DATA_ENV})")
def ls(root: Path | None) -> None:
    """Per dataset: found where (size, checksum), or missing with what to put where."""
    root = _root(root)
    click.echo(f"data root: {root if root else f'${DATA_ENV} is unset (pass --root)'}")
    for name in DATASETS.names():
        probe = DATASETS.get(name).probe
        if probe is None:
            click.echo(f"{name:14s} generated   (no files needed)")
            continue
        try:
            with peek_archives():
                where = probe(root)
        except DatasetMissing as err:
            click.echo(f"{name:14s} missing\n" + "\n".join(f"    {line.strip()}" for line in str(err).splitlines()))
            continue
        if isinstance(where, Found):
            kind = (
                "folder"
                if where.origin.is_dir()
                else "archive"
                if where.origin.name.endswith(ARCHIVE_SUFFIXES)
                else "file"
            )
            click.echo(
                f"{name:14s} found       {where.origin} ({kind}, {_human(_size(where.origin))}, "
                f"checksum {where.checksum()[:16]})"
            )
        else:
            click.echo(f"{name:14s} online      Hugging Face hub id {where}")


def _fetch(spec: DatasetSpec, dest: Path) -> None:
    for url, file_name in spec.downloads:
        target = dest / file_name
        if target.exists():
            click.echo(f"{target} already there")
            continue
        click.echo(f"downloading {url} -> {target}")
        download(url, target)


@data.command("prepare")
@click.argument("name")
@click.option(
    "--root", type=click.Path(path_type=Path), default=None, help=f"where the files are (default ${DATA_ENV})"
)
@click.option(
    "--dest",
    type=click.Path(path_type=Path),
    default=None,
    help="where downloads and built files go (default: the root); load them with root: DEST",
)
@click.option(
    "--sf",
    type=Amount(min=0, min_open=True, max=1),
    default=1.0,
    show_default=True,
    help="shakespeare: LEAF sample fraction",
)
@click.option(
    "-k",
    "min_samples",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="shakespeare: LEAF -k, keeps users with more than K samples",
)
@click.option(
    "--tf",
    type=Amount(min=0, max=1, min_open=True, max_open=True),
    default=0.9,
    show_default=True,
    help="shakespeare: LEAF train fraction",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="shakespeare: sampling seed")
@click.option(
    "--test-gap",
    type=click.IntRange(min=0),
    default=None,
    help="shakespeare: windows skipped between a user's train and test samples (default 79, LEAF's: "
    "no test window overlaps a training window; 0 = adjacent)",
)
def prepare(
    name: str,
    root: Path | None,
    dest: Path | None,
    sf: float,
    min_samples: int,
    tf: float,
    seed: int,
    test_gap: int | None,
) -> None:
    """Make dataset NAME loadable: download it (where a URL exists) or build it from local raw
    files (Shakespeare: always rebuilt from the raw text when the root has it, with the options
    given), then decode it once into the tensor cache."""
    spec = DATASETS.require(name)
    root = _root(root)
    dest = dest or root
    present = spec.probe is None
    raw = spec.raw_build.find(root) if spec.raw_build else None
    if raw is not None:  # built from the raw files whenever the root has them, with the options given
        click.echo(f"building {name} from {raw} into {dest}")
        options = {"fraction": sf, "min_samples": min_samples, "train_fraction": tf, "seed": seed, "test_gap": test_gap}
        stats = spec.raw_build.build(raw, dest, options)
        click.echo(", ".join(f"{key} {value}" for key, value in stats.items()))
    elif spec.probe is not None:
        try:
            spec.probe(root)
            present = True
        except DatasetMissing as missing:
            if dest is None:
                raise UserError(
                    f"{missing}\n  (no --root/--dest and ${DATA_ENV} unset: nowhere to put the files)"
                ) from None
            if spec.downloads:
                _fetch(spec, dest)
            elif spec.raw_build:
                raise dataset_missing(
                    f"{name}: no raw files to build from: put {spec.raw_build.needs} in {root_text(root)}", root
                ) from None
            else:
                raise
    load_root = root if present else dest
    started = time.perf_counter()
    src = load_dataset(name, {}, load_root)
    click.echo(
        f"{name}: {len(src.train_y)} train / {len(src.test_y)} test examples ready "
        f"(loaded from {load_root} in {time.perf_counter() - started:.1f} s; decoded tensors are cached)"
    )
