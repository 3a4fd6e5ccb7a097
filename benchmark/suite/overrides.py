"""Command-line overrides of a suite (`--set PATH=VALUE`, `--seeds`, `--rounds`): applied to
every job exactly like a one-valued suite grid, so they are validated with the same YAML-path
errors, change the job ids, and show in the tables' row labels (a number measured with a
setting other than the suite's says so)."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmark.errors import UserError
from benchmark.suite.safe_yaml import YamlRefused, parse_yaml


@dataclass(frozen=True)
class Overrides:
    values: dict = field(default_factory=dict)  # dotted job-config path -> value
    seeds: tuple[int, ...] | None = None

    @classmethod
    def parse(cls, sets: tuple[str, ...] = (), seeds: str | None = None, rounds: int | None = None) -> Overrides:
        values = {}
        for item in sets:
            path, eq, text = item.partition("=")
            if not eq or not path.strip():
                raise UserError(f"--set {item!r}: expected PATH=VALUE, e.g. --set local.lr=0.05")
            try:
                values[path.strip()] = parse_yaml(text)
            except YamlRefused as err:
                raise UserError(f"--set {item!r}: the value is {err}") from None
        if rounds is not None:
            values["rounds"] = rounds
        seed_list = values.pop("seeds", None)
        if seeds is not None:
            try:
                seed_list = [int(s) for s in seeds.split(",") if s.strip()]
            except ValueError:
                raise UserError(f"--seeds {seeds!r}: expected comma-separated integers, e.g. --seeds 0,1,2") from None
        if seed_list is not None and (
            not isinstance(seed_list, list) or not seed_list or not all(isinstance(s, int) for s in seed_list)
        ):
            raise UserError(f"seeds override {seed_list!r}: expected a non-empty list of integers")
        return cls(values, tuple(seed_list) if seed_list is not None else None)

    def source(self, path: str) -> str | None:
        """The override an error at `path` (a job-config path) comes from, as the user typed it."""
        if path == "seed" and self.seeds is not None:
            return "--seeds"
        for key in self.values:
            if path == key or path.startswith(key + ".") or key.startswith(path + "."):
                return f"--set {key}" if key != "rounds" else "--rounds"
        return None
