"""`extends: PATH`: a suite that takes another (a paper's) whole and adds to it.

Merge rules, the extending suite laid over its parent (PATH is relative to the extending file;
the parent may extend another suite in turn):
- `name`, `description` and any other scalar: the extending suite's, where it gives one;
- `plugins:` and `defaults.seeds` (or a dataset entry's `seeds`): the parent's, then the new ones;
- `defaults:`: merged field by field (`local: {lr: 0.05}` changes lr only; giving `steps`
  drops an inherited `epochs`, and the reverse, as a dataset entry does);
- `datasets:`: an entry whose `label` (or, without one, `name`) is the parent's is merged into
  that entry as `defaults:` is (its `reference:` replaces the parent's whole); any other is added;
- `methods:`: added after the parent's; one whose label is a parent method's replaces it in place;
- `grid:`: each parameter's values are the parent's then the new ones; new parameters are added.
A paper's reference numbers stay attached to a row only while the jobs they were measured under are
unchanged: `withhold_changed_rows` drops a row whose parent jobs the extending suite no longer has
(their job ids changed), and records why in `reference.withheld`.
"""

from __future__ import annotations

import copy

from benchmark.errors import SuiteError
from benchmark.suite.merge import deep_merge, merge_local


def merge_suites(parent: dict, child: dict, file: str, origins: dict | None = None) -> dict:
    """The raw extending suite `child` laid over its raw `parent` (both mappings as read from YAML).
    `origins` ("methods"/"datasets" -> per merged item, the (file, index) pairs it was written at,
    the latest file first) holds the parent's and is updated to the merged suite's (suite/located.py)."""
    origins = {} if origins is None else origins
    for key in ("methods", "datasets"):  # the child's own, until the merge below says otherwise
        if isinstance(child.get(key), list) and not isinstance(parent.get(key), list):
            origins[key] = [[(file, i)] for i in range(len(child[key]))]
    out = copy.deepcopy(parent)
    for key, value in child.items():
        old = parent.get(key)
        if key == "extends":
            continue
        if key in ("plugins", "grid", "datasets", "methods", "defaults") and not isinstance(value, type(old)):
            out[key] = copy.deepcopy(value)  # a wrong or new type: the schema reports it on the merged suite
        elif key == "plugins":
            out[key] = _extended(old, value)
        elif key == "defaults":
            out[key] = _merged_settings(old, value, _seeds(old))
        elif key == "grid":
            new = {k: _extended(old.get(k, []), v) if isinstance(v, list) else v for k, v in value.items()}
            out[key] = {**old, **new}
        elif key == "datasets":
            written = _written(origins, key, old)
            out[key] = _merged_datasets(old, value, _seeds(parent.get("defaults")), file, written)
        elif key == "methods":
            out[key] = _merged_methods(old, value, file, _written(origins, key, old))
        else:
            out[key] = copy.deepcopy(value)
    return out


def _written(origins: dict, key: str, old: list) -> list:
    """Where each of the parent's `key` items was written (the merge appends and replaces in it)."""
    if len(origins.get(key, [])) != len(old):  # a parent read without origins: its items are its own
        origins[key] = [[("<parent>", i)] for i in range(len(old))]
    return origins[key]


def _extended(old: list, new: list) -> list:
    return [*old, *(v for v in new if v not in old)]


def _seeds(settings) -> list:
    """The seeds `settings` (a defaults: mapping) run, the schema's default where it names none."""
    from benchmark.suite.schema import Settings

    given = settings.get("seeds") if isinstance(settings, dict) else None
    return given if isinstance(given, list) else Settings.model_fields["seeds"].default_factory()


def _merged_settings(old: dict, new: dict, seeds: list) -> dict:
    """`new` over `old`, as a dataset entry lies over `defaults:`; seeds extended (from `seeds`, those
    `old` runs), a reference replaced."""
    out = deep_merge(old, {k: v for k, v in new.items() if k != "reference"})
    if "reference" in new:
        out["reference"] = copy.deepcopy(new["reference"])
    if isinstance(old.get("local"), dict) and isinstance(new.get("local"), dict):
        out["local"] = merge_local(old["local"], new["local"])
    if isinstance(new.get("seeds"), list):
        out["seeds"] = _extended(old.get("seeds", seeds), new["seeds"])
    return out


def _entry_label(entry) -> str | None:
    return (entry.get("label") or entry.get("name")) if isinstance(entry, dict) else None


def _merged_datasets(old: list, new: list, seeds: list, file: str, written: list) -> list:
    out = copy.deepcopy(old)
    where = {_entry_label(e): i for i, e in enumerate(out)}
    for i, entry in enumerate(new):
        label = _entry_label(entry)
        if label is not None and label in where:
            out[where[label]] = _merged_settings(out[where[label]], entry, seeds)
            written[where[label]] = [(file, i), *written[where[label]]]
        else:
            out.append(copy.deepcopy(entry))
            written.append([(file, i)])
    return out


def method_label(entry) -> str | None:
    """The label a `methods:` entry gets (None where it is invalid: validation says why later)."""
    from benchmark.fl.presets import preset

    if isinstance(entry, dict) and entry.get("label"):
        return str(entry["label"])
    name = entry if isinstance(entry, str) else entry.get("preset") if isinstance(entry, dict) else None
    try:
        return preset(str(name))["label"] if name is not None else None
    except KeyError:
        return None


def _merged_methods(old: list, new: list, file: str, written: list) -> list:
    out = copy.deepcopy(old)
    labels = [method_label(m) for m in out]
    for i, entry in enumerate(new):
        if isinstance(entry, str) and entry.startswith("+"):
            raise SuiteError(
                file,
                [(f"methods[{i}]", f"an extending suite's methods are added to its parent's: write {entry[1:]!r}")],
            )
        label = method_label(entry)
        if label is not None and label in labels:
            out[labels.index(label)] = copy.deepcopy(entry)
            written[labels.index(label)] = [(file, i)]
        else:
            out.append(copy.deepcopy(entry))
            labels.append(label)
            written.append([(file, i)])
    return out


def withhold_changed_rows(suite, jobs: list, parent, parent_jobs: list):
    """`suite` with each inherited reference row kept only where the parent's jobs of that row (its
    method label, in the same dataset entry) are all among the extending suite's (same job ids)."""
    parents = {e.label or e.name: i for i, e in enumerate(parent.datasets)}
    datasets = []
    for index, entry in enumerate(suite.datasets):
        p_index = parents.get(entry.label or entry.name)
        ref = entry.reference
        if ref is None or p_index is None or ref != parent.datasets[p_index].reference:
            datasets.append(entry)  # no reference, or the extending suite's own
            continue
        ids = {j.id for j in jobs if j.dataset_index == index}
        withheld = {}
        for row in ref.rows:
            measured = {j.id for j in parent_jobs if j.dataset_index == p_index and j.method_label == row}
            if not measured <= ids:
                withheld[row] = "the extending suite changed settings these numbers were measured under"
        rows = {r: v for r, v in ref.rows.items() if r not in withheld}
        contradicted = [c for c in ref.contradicted if c.row in rows]
        update = {"rows": rows, "contradicted": contradicted, "withheld": withheld}
        datasets.append(entry.model_copy(update={"reference": ref.model_copy(update=update)}))
    return suite.model_copy(update={"datasets": datasets})
