"""Write every generated suite from the papers' transcribed tables (REFERENCE_DIR/<paper>.yaml):

    python -m benchmark.papers.generate REFERENCE_DIR OUTDIR

OUTDIR gets one file per paper table group (committed in suites/papers/), and `table1.yaml` and
`fedac_small.yaml` (committed in suites/). The only entry point of the generator, so that the modules
it calls (paper_suites, fedac_suites) import nothing back from it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from benchmark.papers.fedac_suites import fedac_suites
from benchmark.papers.paper_settings import GenerationError
from benchmark.papers.paper_suites import header, suites_from

# Written to suites/ rather than suites/papers/: the suites a newcomer runs first.
TOP_LEVEL = ("table1.yaml", "fedac_small.yaml")


class _Dumper(yaml.SafeDumper):
    """Short lists of scalars (reference rows, seeds) on one line; no YAML anchors."""

    def ignore_aliases(self, data):
        return True


_Dumper.add_representer(
    list,
    lambda d, v: d.represent_sequence(
        "tag:yaml.org,2002:seq", v, flow_style=all(not isinstance(x, (dict, list)) for x in v)
    ),
)

# FedACG's Table 1 = its moderate (a) and large (b) scale groups: `fedbench run suites/table1.yaml`
ALIASES = {"table1": ("fedacg.moderate_dir0.3", "fedacg.large_dir0.3")}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m benchmark.papers.generate REFERENCE_DIR OUTDIR", file=sys.stderr)
        return 2
    ref_dir, out_dir = Path(argv[0]), Path(argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        suites, groups = suites_from(sorted(ref_dir.glob("*.yaml")))
    except GenerationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for alias, names in ALIASES.items():
        first = suites[names[0]]
        suites[alias] = {
            **first,
            "name": alias,
            "description": "FedACG Table 1: " + "; ".join(suites[g]["description"] for g in names),
            "datasets": [d for g in names for d in suites[g]["datasets"]],
            "methods": list(dict.fromkeys(m for g in names for m in suites[g]["methods"])),
        }
        groups[alias] = [t for g in names for t in groups[g]]
    files = {group: (header(group, groups[group], suite), suite) for group, suite in suites.items()}
    files.update(fedac_suites(ref_dir))  # FedAc's figures: their own protocol and header
    for group, (head, suite) in files.items():
        path = out_dir / f"{group}.yaml"
        path.write_text(head + dump_suite(suite))
        print(path)
    return 0


def dump_suite(suite: dict) -> str:
    return yaml.dump(suite, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
