"""Peak memory of loading LEAF FEMNIST JSON shaped like the full build, shard by shard.

Writes `--shards` train and test shard pairs of 100 writers x 227 samples (the full build's mean:
805,263 / 3,550), 90 % train, with real FEMNIST images from the LEAF sample cycled (so the JSON's
text has the real mix of 1.0 and other pixels), then loads them with `load_dataset("femnist")` in a
fresh process and prints its peak RSS, the tensors' size and the time. `--reader PATH` loads with the
package found at PATH instead (e.g. an export of main, for the old reader).

    PYTHONPATH=$PWD FEDBENCH_DATA=/path/to/data python benchmarks/leaf_load_memory.py --shards 2 6
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

WRITERS, SAMPLES, TRAIN = 100, 227, 204

LOAD = """
import resource, sys, time
sys.path.insert(0, {reader!r})
from benchmark.data.source import load_dataset
t = time.perf_counter()
from pathlib import Path
src = load_dataset("femnist", {{}}, Path({root!r}))
n = src.train_x.numel() + src.test_x.numel()
print(len(src.train_y), len(src.test_y), n * 4, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def real_images(data_root: Path) -> np.ndarray:
    """uint8 images (byte = LEAF float * 255) of the shipped LEAF sample's first train shards."""
    from benchmark.data.leaf import leaf_location, read_leaf_split

    users = read_leaf_split(leaf_location(data_root, "femnist").path / "train")
    x = np.concatenate([np.asarray(d["x"], dtype=np.float64) for d in users.values()])
    return np.rint(x * 255).astype(np.uint8)


def write_shards(root: Path, shards: int, images: np.ndarray) -> None:
    from leaf_data.leaf_json import pixels_json, shard_text

    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        (root / "femnist" / "data" / split).mkdir(parents=True, exist_ok=True)
    for s in range(shards):
        blobs = {"train": {}, "test": {}}
        for w in range(WRITERS):
            pick = images[rng.integers(0, len(images), SAMPLES)]
            y = rng.integers(0, 62, SAMPLES)
            blobs["train"][f"f{s:02d}{w:02d}"] = {"x": pick[:TRAIN], "y": y[:TRAIN]}
            blobs["test"][f"f{s:02d}{w:02d}"] = {"x": pick[TRAIN:], "y": y[TRAIN:]}
        for split, users in blobs.items():
            blob = {"users": list(users), "num_samples": [len(d["y"]) for d in users.values()], "user_data": users}
            (root / "femnist" / "data" / split / f"all_data_{s}.json").write_text(shard_text(blob, pixels_json))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shards", type=int, nargs="+", default=[2, 6])
    ap.add_argument("--reader", default=os.getcwd(), help="package root whose loader is measured")
    args = ap.parse_args()
    images = real_images(Path(os.environ["FEDBENCH_DATA"]))
    for shards in args.shards:
        with tempfile.TemporaryDirectory() as tmp:
            write_shards(Path(tmp), shards, images)
            size = sum(p.stat().st_size for p in Path(tmp).rglob("*.json"))
            env = os.environ | {"FEDBENCH_CACHE": str(Path(tmp) / "cache")}
            code = LOAD.format(reader=args.reader, root=tmp)
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            train, test, tensor_bytes, seconds, peak_kb = out.stdout.split()
            print(
                json.dumps(
                    {
                        "shards": shards,
                        "samples": int(train) + int(test),
                        "json_MB": round(size / 2**20),
                        "tensor_MB": round(int(tensor_bytes) / 2**20),
                        "peak_rss_MB": round(int(peak_kb) / 1024),
                        "seconds": round(float(seconds), 1),
                    }
                )
            )


if __name__ == "__main__":
    main()
