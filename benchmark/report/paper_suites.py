"""Generate runnable suites from the papers' reference tables (shared/reference/*.yaml).

    python -m benchmark.report.paper_suites ../shared/reference suites/papers

One suite per paper table group (e.g. `fedacg.moderate_dir0.3` = CIFAR-10, CIFAR-100 and
Tiny-ImageNet columns), one dataset entry per reference table, carrying the printed numbers
as `reference:` data so `fedbench run/report` prints paper beside measured. Settings the
tables leave open follow ALGORITHMS.md (lr 0.1, weight decay 1e-3, clip 10, E = 5, round
decay 0.998 chosen from the papers' {1, 0.998, 0.995}); rows that are not methods (ablation
lines such as "FedAvgM w local reg") are left out of the method list and listed in a comment.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import yaml

from benchmark.report.fedac_suites import fedac_suites

PRESET_OF_ROW = {
    "fedavg": "fedavg", "fedprox": "fedprox", "fedavgm": "fedavgm", "fedadam": "fedadam", "feddyn": "feddyn",
    "scaffold": "scaffold", "moon": "moon", "fedcm": "fedcm", "fedmlb": "fedmlb", "fedlc": "fedlc",
    "fedntd": "fedntd", "feddecorr": "feddecorr", "feddc": "feddc", "fedacg": "fedacg", "fedagm": "fedagm",
    "fedmlb+acg": "fedmlb+acg", "fedlc+acg": "fedlc+acg", "feddecorr+acg": "feddecorr+acg", "fedntd+acg": "fedntd+acg",
}
DATASET = {  # reference dataset -> (fedbench dataset, model, augmentation)
    "cifar10": ("cifar10", "resnet18_gn", {"crop_padding": 4, "flip": True}),
    "cifar100": ("cifar100", "resnet18_gn", {"crop_padding": 4, "flip": True}),
    "tiny_imagenet": ("tiny_imagenet", "resnet18_gn", {"crop_padding": 4, "flip": True}),
    "femnist": ("femnist", "femnist_cnn", {}),
    "celeba": ("celeba", "celeba_cnn", {}),
    "shakespeare": ("shakespeare", "shakespeare_lstm", {}),
}
# Ablation rows that are compositions rather than presets.
ROW_METHODS = {
    "fedavgm w local reg": {"preset": "fedavgm", "label": "FedAvgM w local reg", "client": [{"term": "prox", "mu": 0.01}]},
    "fedacg w/o local reg": {"preset": "fedacg", "label": "FedACG w/o local reg", "client": {"prox": {"mu": 0.0}}},
    "β = 0": {"preset": "fedagm", "label": "β = 0", "client": {"prox": {"mu": 0.0}}},
    "β ≠ 0": {"preset": "fedagm", "label": "β ≠ 0"},
}
# Sensitivity tables print `acc@R[param=value]` columns: the param is swept with a method grid.
SWEEP_PATH = {("fedacg", "lambda"): "server.lam", ("fedacg", "beta"): "client.prox.mu",
              ("fedagm", "lambda"): "server.lam", ("fedagm", "beta"): "client.prox.mu",
              ("fedcm", "alpha"): "client.fedcm.alpha"}
SWEEP_RE = re.compile(r"^((?:acc|rounds_to)@\d+(?:\.\d+)?)\[(\w+)=([0-9.]+)\]$")
SHAKESPEARE_USERS = 660  # LEAF Shakespeare after its minimum-sample cut (the table leaves N open)


def leading_number(value, default):
    if value is None:
        return default
    if isinstance(value, (int, float)):
        return value
    m = re.match(r"\s*([0-9.]+)", str(value))
    return type(default)(float(m.group(1))) if m else default


def batch_size(setting: dict) -> int:
    if "batch_size" in setting:
        return leading_number(setting["batch_size"], 50)
    tiny = setting["dataset"] == "tiny_imagenet"
    large = (setting.get("num_clients") or 0) >= 500
    return (20 if large else 100) if tiny else (10 if large else 50)


def dataset_entry(table: dict) -> dict:
    s = table["setting"]
    name, model, augment = DATASET[s["dataset"]]
    split = {"kind": "natural"} if "leaf" in s["split"] else (
        {"kind": "dirichlet", "alpha": s["alpha"]} if s["split"] == "dirichlet" else {"kind": "iid"})
    sampling = str(s.get("client_sampling", ""))
    participation = {"mode": "bernoulli" if "independently" in sampling else "fixed", "rate": s["participation"]}
    if "candidate_pool" in s:
        participation["pool"] = {"size": s["candidate_pool"], "every": s.get("pool_resample_every_rounds", 100)}
    entry = {
        "name": name,
        "label": table["id"].split(".", 1)[1],
        "split": split,
        "num_clients": s.get("num_clients") or SHAKESPEARE_USERS,
        "rounds": s["rounds"],
        "participation": participation,
        "local": {"epochs": leading_number(s.get("local_epochs"), 5), "batch_size": batch_size(s),
                  "lr": leading_number(s.get("local_lr"), 0.1), "lr_decay": leading_number(s.get("lr_decay"), 0.998),
                  "weight_decay": leading_number(s.get("weight_decay"), 0.001)},
        "model": {"name": model, **({"params": {"norm": "group"}} if model == "femnist_cnn" else {})},
    }
    if augment:
        entry["augment"] = augment
    entry["reference"] = reference_block(table)
    return entry


def reference_block(table: dict) -> dict:
    """Plain tables as they are; sweep columns `acc@R[p=v]` become rows `Method[p'=v]` (p' = our
    parameter's name, as grid labels print it) under the metric `acc@R`."""
    sweeps = [SWEEP_RE.match(m) for m in table["metrics"]]
    if not any(sweeps):  # keep the acc@R / rounds_to@X columns (not e.g. ratios between methods)
        keep = [i for i, m in enumerate(table["metrics"]) if re.fullmatch(r"(acc|rounds_to)@\d+(\.\d+)?", m)]
        return {"source": table["id"], "metrics": [table["metrics"][i] for i in keep],
                "rows": {label: [vals[i] for i in keep] for label, vals in table["rows"].items()}}
    metrics = list(dict.fromkeys(m.group(1) for m in sweeps if m))
    rows = {}
    for label, values in table["rows"].items():
        for match, value in zip(sweeps, values):
            path = SWEEP_PATH[(label.lower(), match.group(2))]
            row = rows.setdefault(f"{label}[{path.split('.')[-1]}={float(match.group(3))}]", [None] * len(metrics))
            row[metrics.index(match.group(1))] = value
    return {"source": table["id"], "metrics": metrics, "rows": rows}


def sweep_grids(tables: list[dict]) -> dict[str, dict[str, list[float]]]:
    """preset -> {parameter path: values} for the sensitivity columns of these tables."""
    grids: dict[str, dict[str, list[float]]] = {}
    for t in tables:
        for m in filter(None, (SWEEP_RE.match(x) for x in t["metrics"])):
            for label in t["rows"]:
                path = SWEEP_PATH[(label.lower(), m.group(2))]
                values = grids.setdefault(PRESET_OF_ROW[label.lower()], {}).setdefault(path, [])
                if float(m.group(3)) not in values:
                    values.append(float(m.group(3)))
    return grids


def method_entries(tables: list[dict]) -> tuple[list, list[str]]:
    rows = list(dict.fromkeys(r for t in tables for r in t["rows"]))
    grids = sweep_grids(tables)
    methods, skipped = [], []
    for r in rows:
        key = r.lower()
        if key in PRESET_OF_ROW:
            name = PRESET_OF_ROW[key]
            methods.append({"preset": name, "grid": grids[name]} if name in grids else name)
        elif key in ROW_METHODS:
            methods.append(ROW_METHODS[key])
        else:
            skipped.append(r)
    return list({json.dumps(m, sort_keys=True): m for m in methods}.values()), skipped


def suites_from(reference_files: list[Path]) -> dict[str, dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for f in reference_files:
        for table in yaml.safe_load(f.read_text()).get("tables", []):
            if table.get("setting", {}).get("dataset") in DATASET and table.get("rows"):
                prefix, last = table["id"].rsplit(".", 1)
                groups[prefix if last.startswith(tuple(DATASET)) else table["id"]].append(table)
    suites = {}
    for group, tables in sorted(groups.items()):
        methods, skipped = method_entries(tables)
        if not methods:
            continue
        suites[group] = {
            "name": group.replace("_", "-"),
            "description": f"Reproduces {group} ({', '.join(t['id'] for t in tables)})"
            + (f"; rows without a preset: {', '.join(skipped)}" if skipped else ""),
            "defaults": {"seeds": [0], "eval_every": 1, "checkpoint_every": 100,
                         "local": {"clip_norm": 10}},
            "datasets": [dataset_entry(t) for t in tables],
            "methods": methods,
        }
    return suites


class _Dumper(yaml.SafeDumper):
    """Short lists of scalars (reference rows, seeds) on one line; no YAML anchors."""

    def ignore_aliases(self, data):
        return True


_Dumper.add_representer(list, lambda d, v: d.represent_sequence(
    "tag:yaml.org,2002:seq", v, flow_style=all(not isinstance(x, (dict, list)) for x in v)))

# FedACG's Table 1 = its moderate (a) and large (b) scale groups: `fedbench run suites/table1.yaml`
ALIASES = {"table1": ("fedacg.moderate_dir0.3", "fedacg.large_dir0.3")}


def main(argv: list[str]) -> int:
    ref_dir, out_dir = Path(argv[0]), Path(argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    suites = suites_from(sorted(ref_dir.glob("*.yaml")))
    for alias, groups in ALIASES.items():
        first = suites[groups[0]]
        suites[alias] = {**first, "name": alias, "description": "FedACG Table 1: " + "; ".join(suites[g]["description"] for g in groups),
                         "datasets": [d for g in groups for d in suites[g]["datasets"]],
                         "methods": list(dict.fromkeys(m for g in groups for m in suites[g]["methods"]))}
    header = "# Generated by `python -m benchmark.report.paper_suites` from shared/reference; edit the generator.\n"
    files = {group: (header, suite) for group, suite in suites.items()}
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
