"""Peak memory and time of `fedbench data prepare femnist`'s build on a generated NIST SD19.

Writes by_class.zip and by_write.zip in the official layout with `--writers` writers x 200
handwriting-like 128x128 PNGs (a random black block on white), builds with the defaults in a fresh
process and prints its peak RSS: bounded by one 100-writer shard, whatever the number of writers.

    PYTHONPATH=$PWD python benchmarks/femnist_build_memory.py --writers 100 400
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

PER_WRITER = 200
BUILD = """
import resource, time
from pathlib import Path
from leaf_data import femnist
from leaf_data.sampling import LeafOptions
t = time.perf_counter()
stats = femnist.build(Path({root!r}), Path({root!r}) / "out", LeafOptions(), show=femnist.quiet)
print(stats["samples"], time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_nist(root: Path, writers: int) -> None:
    rng = np.random.default_rng(0)
    with (
        zipfile.ZipFile(root / "by_class.zip", "w") as by_class,
        zipfile.ZipFile(root / "by_write.zip", "w") as by_write,
    ):
        for w in range(writers):
            for k in range(PER_WRITER):
                a = np.full((128, 128), 255, dtype=np.uint8)
                top, left = rng.integers(10, 70, 2)
                a[top : top + rng.integers(20, 50), left : left + rng.integers(5, 40)] = 0
                buf = io.BytesIO()
                Image.fromarray(a).convert("1").save(buf, format="PNG")
                cls = f"{0x30 + k % 10:x}"
                by_class.writestr(f"by_class/{cls}/hsf_0/hsf_0_{w:04d}{k:03d}.png", buf.getvalue())
                by_write.writestr(f"by_write/hsf_0/f{w:04d}_00/c{w:04d}_00/c{w:04d}_00_{k:05d}.png", buf.getvalue())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writers", type=int, nargs="+", default=[100, 400])
    for writers in ap.parse_args().writers:
        with tempfile.TemporaryDirectory() as tmp:
            write_nist(Path(tmp), writers)
            out = subprocess.run(
                [sys.executable, "-c", BUILD.format(root=tmp)], capture_output=True, text=True, check=True
            )
            samples, seconds, peak_kb = out.stdout.split()
            json_mb = sum(p.stat().st_size for p in (Path(tmp) / "out" / "data").rglob("*.json")) / 2**20
            print(
                json.dumps(
                    {
                        "writers": writers,
                        "samples": int(samples),
                        "json_MB": round(json_mb),
                        "peak_rss_MB": round(int(peak_kb) / 1024),
                        "seconds": round(float(seconds), 1),
                    }
                )
            )


if __name__ == "__main__":
    main()
