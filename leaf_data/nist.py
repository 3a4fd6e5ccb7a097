"""NIST Special Database 19 as LEAF's FEMNIST preprocessing reads it (data/femnist/preprocess/ in LEAF).

`by_class` holds every handwritten character under its class (`by_class/<hex class>/hsf_<k>/*.png`;
the `train_<hex>` folders repeat the same images and the `*.mit` files are index files: both are
left out, as LEAF does); `by_write` holds the same images under their writer
(`by_write/hsf_<k>/<writer>/<form>/*.png`). An image's class is found by the md5 of its PNG bytes:
LEAF matches every by_write image to the by_class image with the same bytes (the first one listed).
Each part is read from the official zip or from its extracted folder.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PARTS = ("by_class", "by_write")
SIZE = 28  # LEAF's images: 128x128 PNGs reduced to 28x28


@dataclass(frozen=True)
class NistPart:
    """One of by_class / by_write: the zip (members read in place) or the extracted folder."""

    name: str
    origin: Path

    def members(self) -> list[str]:
        """Every file, as 'by_class/4a/hsf_0/x.png' relative names, sorted (LEAF lists directories;
        sorting makes the order the same on every file system)."""
        if self.origin.is_file():
            with zipfile.ZipFile(self.origin) as zf:
                names = [n for n in zf.namelist() if not n.endswith("/")]
        else:
            names = [str(p.relative_to(self.origin.parent)) for p in self.origin.rglob("*") if p.is_file()]
        return sorted(n for n in names if n.split("/", 1)[0] == self.name)

    def read(self, names: list[str]) -> Iterator[bytes]:
        """The bytes of `names`, in that order."""
        if self.origin.is_file():
            with zipfile.ZipFile(self.origin) as zf:
                for n in names:
                    yield zf.read(n)
        else:
            for n in names:
                yield (self.origin.parent / n).read_bytes()


def find_parts(root: Path | None) -> dict[str, NistPart] | None:
    """by_class and by_write under `root` (`<part>/` folder preferred to `<part>.zip`); None unless both."""
    if root is None:
        return None
    found = {}
    for name in PARTS:
        for candidate in (root / name, root / f"{name}.zip"):
            if candidate.exists():
                found[name] = NistPart(name, candidate)
                break
    return found if len(found) == len(PARTS) else None


def class_images(members: list[str]) -> list[tuple[str, str]]:
    """(hex class, member) of the by_class images LEAF uses: two-character class folders, subfolders
    named hsf_* (not train_*, not *.mit index files)."""
    out = []
    for m in members:
        parts = m.split("/")
        if (
            len(parts) == 4
            and len(parts[1]) == 2
            and "hsf" in parts[2]
            and "mit" not in parts[2]
            and m.endswith(".png")
        ):
            out.append((parts[1], m))
    return out


def writer_images(members: list[str]) -> list[tuple[str, str]]:
    """(writer, member) of every by_write image: by_write/<hsf part>/<writer>/<form>/<image>.png."""
    return [(m.split("/")[2], m) for m in members if len(m.split("/")) == 5 and m.endswith(".png")]


def md5s(part: NistPart, names: list[str]) -> list[str]:
    return [hashlib.md5(blob).hexdigest() for blob in part.read(names)]


def relabel(hex_class: str) -> int:
    """LEAF's label of a class folder (the character's ASCII code in hex): digits 0-9, upper-case
    letters 10-35, lower-case 36-61."""
    code = int(hex_class, 16)
    if ord("0") <= code <= ord("9"):
        return code - ord("0")
    if ord("A") <= code <= ord("Z"):
        return code - ord("A") + 10
    if ord("a") <= code <= ord("z"):
        return code - ord("a") + 36
    raise ValueError(f"by_class folder {hex_class!r} is not a digit or letter code")


def match_writers(
    class_hashes: list[tuple[str, str, str]], writer_hashes: list[tuple[str, str, str]]
) -> tuple[dict[str, list[tuple[str, int]]], int]:
    """writer -> [(by_write member, label)] in listing order, and how many by_write images have no
    by_class twin (LEAF would stop with a KeyError; they are left out and counted)."""
    label_of: dict[str, int] = {}
    for hex_class, _, digest in class_hashes:
        label_of.setdefault(digest, relabel(hex_class))  # the first listed wins, as LEAF's reversed fill
    writers: dict[str, list[tuple[str, int]]] = {}
    unmatched = 0
    for writer, member, digest in writer_hashes:
        if digest in label_of:
            writers.setdefault(writer, []).append((member, label_of[digest]))
        else:
            unmatched += 1
    return writers, unmatched


def to_pixels(png: bytes) -> np.ndarray:
    """LEAF's conversion: grey scale, thumbnail to 28x28 with Lanczos; uint8 (784,), white
    background = 255 (LEAF stores byte / 255). The thumbnail is one Lanczos resize, as Pillow made
    it when LEAF's data was published; Pillow 7+ first reduces by 2 (`reducing_gap`), which moves
    about 1 pixel in 9 by up to 12/255."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as img:
        grey = img.convert("L")
        grey.thumbnail((SIZE, SIZE), Image.Resampling.LANCZOS, reducing_gap=None)
        arr = np.asarray(grey, dtype=np.uint8)
    if arr.shape != (SIZE, SIZE):
        raise ValueError(f"a NIST image became {arr.shape}, not 28x28: is it square?")
    return arr.reshape(-1)
