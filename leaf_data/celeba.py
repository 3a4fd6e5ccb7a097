"""Building LEAF CelebA from the official CelebA files (LEAF's data/celeba/preprocess/metadata_to_json.py).

Users are celebrities (`identity_CelebA.txt`: image name, celebrity id), kept when they have at least
5 images; x = the image file names in the identity file's order, y = the image's Smiling attribute in
`list_attr_celeba.txt` as LEAF writes it, (attribute + 1) / 2: the floats 0.0 / 1.0. All celebrities form one all_data shard, then LEAF's
sampling, -k and split follow (`sampling.py`). The images themselves are read by the loader.
"""

from __future__ import annotations

from pathlib import Path

from leaf_data.leaf_json import write_splits
from leaf_data.sampling import LeafOptions, sample_and_remove, shard, split_shards

MIN_IMAGES = 5  # LEAF keeps celebrities with at least 5 images
ATTRIBUTE = "Smiling"
ANNOTATIONS = ("identity_CelebA.txt", "list_attr_celeba.txt")
IMAGES = ("img_align_celeba", "img_align_celeba.zip")  # the official folder, or its zip


def raw_folder(root: Path | None) -> Path | None:
    """Where the annotation files are: the root itself, or LEAF's `celeba/data/raw/`."""
    if root is None:
        return None
    return next(
        (d for d in (root, root / "celeba" / "data" / "raw") if all((d / a).is_file() for a in ANNOTATIONS)), None
    )


def celebrities(identity_file: Path) -> dict[str, list[str]]:
    """celebrity -> image names (file order), for celebrities with at least MIN_IMAGES images."""
    images: dict[str, list[str]] = {}
    for line in identity_file.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2:
            images.setdefault(fields[1], []).append(fields[0])
    return {c: names for c, names in images.items() if len(names) >= MIN_IMAGES}


def smiling(attr_file: Path) -> dict[str, float]:
    """image name -> 0/1: line 1 is the image count, line 2 the 40 attribute names, then one row per image."""
    lines = attr_file.read_text().splitlines()
    if len(lines) < 2 or ATTRIBUTE not in lines[1].split():
        raise ValueError(f"{attr_file}: line 2 should name the 40 attributes, {ATTRIBUTE} among them")
    col = lines[1].split().index(ATTRIBUTE) + 1  # + the image name column
    out = {}
    for line in lines[2:]:
        fields = line.split()
        if fields:
            if fields[col] not in ("-1", "1"):
                raise ValueError(f"{attr_file}: {fields[0]} has {ATTRIBUTE} = {fields[col]!r}, not -1 or 1")
            out[fields[0]] = (int(fields[col]) + 1) / 2
    return out


def all_data(raw: Path) -> dict:
    """LEAF's single all_data shard: users = celebrities, x = image names, y = Smiling."""
    targets = smiling(raw / "list_attr_celeba.txt")
    users = celebrities(raw / "identity_CelebA.txt")
    missing = [n for names in users.values() for n in names if n not in targets]
    if missing:
        raise ValueError(f"list_attr_celeba.txt has no row for {len(missing)} images, e.g. {missing[0]}")
    return shard({c: {"x": names, "y": [targets[n] for n in names]} for c, names in users.items()})


def link_images(raw: Path, out: Path) -> None:
    """Make the images reachable from `<out>/data/raw/` (LEAF's place) when they lie elsewhere."""
    for name in IMAGES:
        there, here = raw / name, out / "data" / "raw" / name
        if there.exists() and not here.exists() and there.resolve() != here.resolve():
            here.parent.mkdir(parents=True, exist_ok=True)
            here.symlink_to(there.resolve())


def build(raw: Path, out: Path, opts: LeafOptions) -> dict[str, int]:
    """CelebA's LEAF JSON into `<out>/data/{train,test}/*.json` (and a link to the images); returns counts."""
    if opts.shard_order != "numeric":
        raise ValueError("--shard-order applies to femnist: CelebA is one all_data shard, its order draws nothing")
    everything = all_data(raw)
    link_images(raw, out)
    kept = list(sample_and_remove(iter([everything]), opts))
    counts = [len(b["users"]) for b in kept]
    stats = write_splits(out, split_shards(kept, opts, counts), opts.tag())
    return {"celebrities": len(everything["users"]), "images": sum(everything["num_samples"])} | stats
