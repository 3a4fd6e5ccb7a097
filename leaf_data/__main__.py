"""python -m leaf_data shakespeare --raw shakespeare-complete-works.txt.gz --out DIR [LEAF options]"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from leaf_data.shakespeare import BuildOptions, build


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m leaf_data", description=__doc__)
    sub = ap.add_subparsers(dest="dataset", required=True)
    sp = sub.add_parser("shakespeare", help="rebuild LEAF Shakespeare from the raw complete works")
    sp.add_argument("--raw", type=Path, required=True, help="shakespeare-complete-works.txt[.gz]")
    sp.add_argument("--out", type=Path, required=True, help="writes OUT/data/{train,test}/*.json")
    sp.add_argument("--iid", action="store_true", help="LEAF -s iid (default niid)")
    sp.add_argument("--sf", type=float, default=1.0, help="LEAF --sf: fraction of the data sampled")
    sp.add_argument("-k", type=int, default=0, help="LEAF -k: keep users with at least K samples")
    sp.add_argument("--tf", type=float, default=0.9, help="LEAF --tf: train fraction of each user's samples")
    sp.add_argument("--smplseed", type=int, default=0, help="LEAF --smplseed: seed of the sampling draw")
    sp.add_argument("--test-gap", type=int, default=None, help="windows between train and test (default 79, LEAF's)")
    sp.add_argument("--iid-users", type=int, default=100, help="iid only: number of users")
    args = ap.parse_args(argv)
    if not args.raw.is_file():
        print(
            f"error: {args.raw} does not exist (the raw text LEAF downloads: "
            "http://www.gutenberg.org/files/100/old/1994-01-100.zip)",
            file=sys.stderr,
        )
        return 2
    opts = BuildOptions(args.iid, args.sf, args.k, args.tf, args.smplseed, args.iid_users, test_gap=args.test_gap)
    print(json.dumps(build(args.raw, args.out, opts), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
