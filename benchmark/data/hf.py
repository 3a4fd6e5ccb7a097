"""Hugging Face datasets as a source of labelled images: a hub id (online) or a local copy
(a `save_to_disk` folder, or parquet/arrow files as downloaded from the hub)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmark.errors import DatasetMissing, UserError
from benchmark.lazy import torch


def hf_datasets():
    try:
        import datasets
    except ImportError:
        raise UserError("the Hugging Face format needs the `datasets` package: pip install 'fedbench[hf]'") from None
    return datasets


def has_local_copy(folder: Path) -> bool:
    return folder.is_dir() and (
        (folder / "dataset_dict.json").is_file() or any(folder.rglob("*.parquet")) or any(folder.rglob("*.arrow"))
    )


def open_hf(source: str | Path):
    """A DatasetDict from a local folder (Path) or a hub id (str)."""
    ds = hf_datasets()
    try:
        if isinstance(source, Path):
            if (source / "dataset_dict.json").is_file():
                return ds.load_from_disk(str(source))
            builder = "parquet" if any(source.rglob("*.parquet")) else "arrow"
            return ds.load_dataset(builder, data_dir=str(source))
        return ds.load_dataset(source)
    except Exception as err:  # the library raises many types (network, format, missing split)
        raise DatasetMissing(f"cannot load Hugging Face dataset {source}: {type(err).__name__}: {err}") from None


def hf_split(dd, split_names: Sequence[str], image_keys: Sequence[str], label_keys: Sequence[str], where: str):
    """(uint8 NCHW images, int64 labels) of the first split in `split_names` that `dd` has."""
    split = next((s for s in split_names if s in dd), None)
    if split is None:
        raise DatasetMissing(f"{where}: no split named {' or '.join(split_names)} (has {sorted(dd)})")
    table = dd[split]
    cols = set(table.column_names)
    img_key = next((k for k in image_keys if k in cols), None)
    lab_key = next((k for k in label_keys if k in cols), None)
    if img_key is None or lab_key is None:
        raise DatasetMissing(
            f"{where}/{split}: expected an image column ({'/'.join(image_keys)}) and a label column "
            f"({'/'.join(label_keys)}), found {sorted(cols)}"
        )
    images = [np.asarray(img.convert("RGB")) for img in table[img_key]]
    if len({a.shape for a in images}) != 1:
        raise DatasetMissing(f"{where}/{split}: images differ in size")
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).contiguous()
    return x, torch.tensor(table[lab_key], dtype=torch.long)
