"""A tiny NIST SD19 in the official layout: by_class/<hex>/{hsf_k/, train_<hex>/, hsf_k.mit} and
by_write/hsf_k/<writer>/<form>/, the same PNG bytes in both, as in the real database."""

from __future__ import annotations

import io
import zipfile

import numpy as np
from PIL import Image

# (writer, hsf part, hex class, grey value of the uniform 128x128 image); one image per row
IMAGES = [
    ("f0000_14", 0, "30", 40),  # '0' -> label 0
    ("f0000_14", 0, "41", 80),  # 'A' -> 10
    ("f0000_14", 0, "61", 120),  # 'a' -> 36
    ("f0001_41", 1, "7a", 160),  # 'z' -> 61
    ("f0001_41", 1, "39", 200),  # '9' -> 9
    ("f0002_17", 1, "5a", 240),  # 'Z' -> 35
]
LABELS = {"30": 0, "41": 10, "61": 36, "7a": 61, "39": 9, "5a": 35}
ORPHAN_VALUE = 7  # a by_write image with no by_class twin


def png(value: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((128, 128), value, dtype=np.uint8)).convert("RGB").save(buf, format="PNG")
    return buf.getvalue()


def half_black_png() -> bytes:
    """Left half black, right half white: thumbnail columns near the sides keep 0 and 255."""
    a = np.full((128, 128), 255, dtype=np.uint8)
    a[:, :64] = 0
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


def nist_files(with_half_black: bool = True) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    rows = list(IMAGES) + ([("f0002_17", 1, "41", None)] if with_half_black else [])
    for k, (writer, hsf, cls, value) in enumerate(rows):
        blob = half_black_png() if value is None else png(value)
        files[f"by_class/{cls}/hsf_{hsf}/hsf_{hsf}_{k:05d}.png"] = blob
        files[f"by_class/{cls}/train_{cls}/train_{cls}_{k:05d}.png"] = png(255 - k)  # LEAF skips train_*
        files[f"by_class/{cls}/hsf_{hsf}.mit"] = b"index file, skipped\n"
        files[f"by_write/hsf_{hsf}/{writer}/c{writer[1:]}/c{writer[1:]}_{k:05d}.png"] = blob
    files["by_write/hsf_1/f0002_17/c0002_17/c0002_17_99999.png"] = png(ORPHAN_VALUE)
    return files


def write_nist(root, as_zip: bool = True, with_half_black: bool = True) -> None:
    files = nist_files(with_half_black)
    root.mkdir(parents=True, exist_ok=True)
    for part in ("by_class", "by_write"):
        mine = {n: b for n, b in files.items() if n.startswith(part + "/")}
        if as_zip:
            with zipfile.ZipFile(root / f"{part}.zip", "w") as zf:
                for name, blob in mine.items():
                    zf.writestr(name, blob)
        else:
            for name, blob in mine.items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_bytes(blob)
