"""Command-line overrides of a suite (`--set [NAME:]PATH=VALUE`, `--seeds`, `--rounds`): applied
like a one-valued suite grid, so they are validated with the same YAML-path errors, change the job
ids, and show in the tables' row labels (a number measured with a setting other than the suite's
says so). A setting reaches only the jobs whose config has its field (a method's parameter reaches
the methods that have it); `NAME:` limits it further to the jobs `--only NAME` would select."""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmark.errors import UserError
from benchmark.suite.safe_yaml import YamlRefused, parse_yaml

# PATH=VALUE, else NAME:PATH=VALUE. A name may hold '=' (FedACG[lam=0.7]) but no ':'; a value may hold either.
SETTING = re.compile(r"(?P<path>[A-Za-z_][\w.]*)=(?P<value>.*)", flags=re.S)
SCOPED_SETTING = re.compile(r"(?P<scope>[^:]+):(?P<path>[A-Za-z_][\w.]*)=(?P<value>.*)", flags=re.S)


@dataclass(frozen=True)
class Setting:
    path: str  # dotted job-config path, as in a suite grid
    value: object
    scope: str | None = None  # the job / method / dataset name it is limited to (as --only matches)
    flag: str = ""  # how the user typed it, for errors

    def __post_init__(self):
        if not self.flag:
            object.__setattr__(self, "flag", f"--set {self.scope + ':' if self.scope else ''}{self.path}")


@dataclass(frozen=True)
class Overrides:
    settings: tuple[Setting, ...] = ()
    seeds: tuple[int, ...] | None = None

    @classmethod
    def parse(cls, sets: tuple[str, ...] = (), seeds: str | None = None, rounds: int | None = None) -> Overrides:
        settings = []
        for item in sets:
            match = SETTING.fullmatch(item.strip()) or SCOPED_SETTING.fullmatch(item.strip())
            if not match:
                raise UserError(
                    f"--set {item!r}: expected PATH=VALUE or METHOD:PATH=VALUE, e.g. --set local.lr=0.05 "
                    "or --set FedACG:method.server.lam=0.9"
                )
            try:
                value = parse_yaml(match["value"])
            except YamlRefused as err:
                raise UserError(f"--set {item!r}: the value is {err}") from None
            settings.append(Setting(match["path"], value, match.groupdict().get("scope")))
        if rounds is not None:
            settings.append(Setting("rounds", rounds, flag="--rounds"))
        seed_list = next((s.value for s in settings if s.path == "seeds" and s.scope is None), None)
        settings = [s for s in settings if s.path != "seeds"]
        if seeds is not None:
            seed_list = _seed_list(seeds)
        if seed_list is not None and (
            not isinstance(seed_list, list) or not seed_list or not all(isinstance(s, int) for s in seed_list)
        ):
            raise UserError(f"seeds override {seed_list!r}: expected a non-empty list of integers")
        if seed_list is not None:
            _check_seeds(seed_list, "--seeds" if seeds is not None else "--set seeds")
        return cls(tuple(settings), tuple(seed_list) if seed_list is not None else None)

    @property
    def values(self) -> dict:
        """Path -> value of the settings for every job (for a job, see expand's scoped application)."""
        return {s.path: s.value for s in self.settings if s.scope is None}


def _seed_list(text: str) -> list[int]:
    """--seeds S1,S2,..: each item an integer, none empty (`1,,2` is a typo, not seeds 1 and 2)."""
    items = [item.strip() for item in text.split(",")]
    if "" in items:
        raise UserError(f"--seeds {text!r}: item {items.index('') + 1} is empty; expected e.g. --seeds 0,1,2")
    try:
        seeds = [int(item) for item in items]
    except ValueError:
        raise UserError(f"--seeds {text!r}: expected comma-separated integers, e.g. --seeds 0,1,2") from None
    return seeds


def _check_seeds(seeds: list[int], flag: str) -> None:
    """Each seed in the range a suite's `seeds:` accepts, the error naming the option."""
    from pydantic import TypeAdapter, ValidationError

    from benchmark.job.settings import Seed

    for seed in seeds:
        try:
            TypeAdapter(Seed).validate_python(seed)
        except ValidationError as err:
            raise UserError(f"{flag}: seed {seed}: {err.errors()[0]['msg']}") from None
    if twice := [seed for i, seed in enumerate(seeds) if seed in seeds[:i]]:
        raise UserError(f"{flag}: seed {twice[0]} is given twice (each seed runs once)")
