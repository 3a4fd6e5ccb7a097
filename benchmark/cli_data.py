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
        spec = DATASETS.get(name)
        probe = spec.probe
        if probe is None:
            click.echo(f"{name:14s} generated   (no files needed)")
            continue
        try:
            with peek_archives():
                where = probe(root)
        except DatasetMissing as err:
            raw = spec.raw_build.find(root) if spec.raw_build else None
            if raw is not None:
                click.echo(f"{name:14s} buildable   from {raw}: `fedbench data prepare {name}` builds it")
                continue
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
            route = f"{where.route}, " if where.route else ""
            raw = spec.raw_build.find(root) if spec.raw_build else None
            click.echo(
                f"{name:14s} found       {where.origin} ({route}{kind}, {_human(_size(where.origin))}, "
                f"checksum {where.checksum()[:16]})"
                + (f"; `fedbench data prepare {name}` would rebuild it from {raw}" if raw else "")
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


def _leaf_option(flag: str, name: str, kind, default, text: str):
    """An option of the LEAF builds (femnist, celeba, shakespeare), named as in LEAF's preprocess.sh where LEAF has it."""
    return click.option(flag, name, type=kind, default=default, show_default=True, help=f"LEAF builds: {text}")


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
@_leaf_option("-s", "sampling", click.Choice(["niid", "iid"]), "niid", "LEAF -s: sample users whole or pool samples")
@_leaf_option("--sf", "fraction", Amount(min=0, min_open=True, max=1), 1.0, "LEAF --sf: fraction of the samples kept")
@_leaf_option(
    "--iu",
    "iid_users",
    Amount(min=0, min_open=True, max=1),
    None,
    "femnist/celeba -s iid: users per shard as a fraction of its users (0.01)",
)
@_leaf_option("-k", "min_samples", click.IntRange(min=0), 0, "LEAF -k: users with fewer samples are dropped")
@_leaf_option(
    "-t",
    "split",
    click.Choice(["sample", "user"]),
    "sample",
    "LEAF -t: split each user's samples, or the users "
    "(fedbench's natural split needs sample; shakespeare: sample only)",
)
@_leaf_option(
    "--tf", "train_fraction", Amount(min=0, max=1, min_open=True, max_open=True), 0.9, "LEAF --tf: train fraction"
)
@_leaf_option(
    "--smplseed",
    "sampling_seed",
    SEED,
    None,
    "LEAF --smplseed: seed of the sampling draw (-s, --sf) [default: 0; LEAF's: the clock]",
)
@_leaf_option(
    "--spltseed",
    "split_seed",
    SEED,
    None,
    "LEAF --spltseed: seed of the train/test draw (-t, --tf) [default: 0; LEAF's: the clock]",
)
@_leaf_option(
    "--shard-order",
    "shard_order",
    click.Choice(["numeric", "name"]),
    None,
    "femnist: the order its all_data shards are drawn from (numeric: all_data_0, 1, 2, ...; name: 0, 1, 10, "
    "100, ...) [default: numeric; LEAF's: os.listdir, the file system's]",
)
@click.option(
    "--test-gap",
    type=click.IntRange(min=0),
    default=None,
    help="shakespeare: windows skipped between a user's train and test samples (default 79, LEAF's: "
    "no test window overlaps a training window; 0 = adjacent)",
)
def prepare(name: str, root: Path | None, dest: Path | None, **options) -> None:
    """Make dataset NAME loadable: download it (where a URL exists) or build it from local raw
    files (FEMNIST from NIST SD19, CelebA from its official files, Shakespeare from the raw text:
    always rebuilt when the root has them, with the options given), then decode it once into the
    tensor cache."""
    spec = DATASETS.require(name)
    root = _root(root)
    dest = dest or root
    present = spec.probe is None
    raw = spec.raw_build.find(root) if spec.raw_build else None
    if raw is None and spec.probe is not None:
        try:
            where = spec.probe(root)
            present = True
            if spec.raw_build:  # e.g. LEAF's FEMNIST sample: say how the full set would be built instead
                click.echo(
                    f"{name}: using {getattr(where, 'origin', where)}; with {spec.raw_build.needs} in the root, "
                    f"`fedbench data prepare {name}` builds it from them instead"
                )
        except DatasetMissing as missing:
            if dest is None:
                raise UserError(
                    f"{missing}\n  (no --root/--dest and ${DATA_ENV} unset: nowhere to put the files)"
                ) from None
            if spec.downloads:
                _fetch(spec, dest)
                raw = spec.raw_build.find(dest) if spec.raw_build else None
            elif spec.raw_build:
                raise dataset_missing(
                    f"{name}: no raw files to build from: put {spec.raw_build.needs} in {root_text(root)}", root
                ) from None
            else:
                raise
    if raw is not None:  # built from the raw files whenever the root has them, with the options given
        click.echo(f"building {name} from {raw} into {dest}")
        options["iid"] = options.pop("sampling") == "iid"
        try:
            stats = spec.raw_build.build(raw, dest, options)
        except ValueError as err:  # options the builder cannot take
            raise UserError(f"{name}: {err}") from None
        click.echo(", ".join(f"{key} {value}" for key, value in stats.items()))
        present = False
    load_root = root if present else dest
    started = time.perf_counter()
    src = load_dataset(name, {}, load_root)
    click.echo(
        f"{name}: {len(src.train_y)} train / {len(src.test_y)} test examples ready "
        f"(loaded from {load_root} in {time.perf_counter() - started:.1f} s; decoded tensors are cached)"
    )
