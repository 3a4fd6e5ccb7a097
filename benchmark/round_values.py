"""The values a job records per evaluated round, each declared once here (or by a plugin, with
`register_round_value`): its name, type, how a job's rounds aggregate into one number, whether MLflow
logs it, its label in tables and figures, and whether the report's tables show it as a column.

Everything else follows from the declaration: a line of metrics.jsonl is `RoundRecord`, whose fields
are the built-in values below (store/records.py); MLflow logs each value with `mlflow` every evaluated
round (run/mlflow_mirror.round_metrics); the report's rounds frame has a column per value with `column`,
and its tables that value aggregated per job, mean ± std over seeds (report/frames.py,
report/entry_tables.py). The engine computes the built-in values itself (engine/simulation.py); a value
with `measure` is measured by calling it with the simulation after each evaluation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from benchmark.errors import UserError
from benchmark.registry import Registry

Aggregate = Literal["last", "sum", "mean", "max", "min"]


@dataclass(frozen=True)
class RoundValue:
    name: str  # its key in metrics.jsonl, its MLflow metric, its rounds-frame and runs.csv column
    type: type  # int or float: what a record holds
    aggregate: Aggregate  # how a job's evaluated rounds make one number (a table cell is it, over seeds)
    label: str  # what a table's header or a figure's axis calls it
    mlflow: bool = True  # logged to MLflow at each evaluated round (step = round)
    # the report's tables show its aggregate, as does runs.csv (the built-in values have columns of their own)
    column: bool = False
    higher_is_better: bool | None = None  # how a table column ranks it (None: shown, never ranked)
    unit: str = ""  # how a table prints it: report/cells.number_text ("" two decimals, "MB", "s", "rounds", ...)
    optional: bool = True  # a record may lack it (left out of metrics.jsonl, not null)
    measure: Callable[[Any], float] | None = None  # simulation -> the value; None: the engine's own

    def __post_init__(self):
        """A declaration that could not flow everywhere is refused where it is written (a plugin: at its import)."""
        if not self.name.isidentifier():  # a CSV/JSON key and an MLflow metric, never a summary's acc@R
            raise UserError(f"per-round value {self.name!r}: a name is a Python identifier, e.g. grad_norm")
        if self.type not in (int, float):
            raise UserError(f"per-round value {self.name!r}: type is int or float, not {self.type!r}")
        if self.aggregate not in get_args(Aggregate):
            raise UserError(f"per-round value {self.name!r}: aggregate is one of {', '.join(get_args(Aggregate))}")


ROUND_VALUES: Registry[RoundValue] = Registry("per-round value", None)
register_round_value = ROUND_VALUES.register  # a plugin's: register_round_value(RoundValue(...))


def logged() -> list[str]:
    """The values MLflow logs per round."""
    return [v.name for v in ROUND_VALUES.in_order() if v.mlflow]


def in_columns() -> list[RoundValue]:
    """The values the report's tables show as columns (and its rounds frame holds)."""
    return [v for v in ROUND_VALUES.in_order() if v.column]


def measured_by_call() -> list[RoundValue]:
    """The values the engine measures by calling their `measure` (a plugin's)."""
    return [v for v in ROUND_VALUES.in_order() if v.measure is not None]


def aggregated(value: RoundValue, series):
    """A job's rounds of `value` (a pandas Series in round order) as its one number."""
    return getattr(series, value.aggregate)() if value.aggregate != "last" else series.iloc[-1]


# The built-in values, in metrics.jsonl's order: RoundRecord's fields (store/records.py)
BUILT_IN = (
    RoundValue("round", int, "last", "round", mlflow=False, optional=False),
    RoundValue("test_acc", float, "last", "test accuracy, raw (%)", optional=False),
    RoundValue("test_loss", float, "last", "test loss", optional=False),
    RoundValue("train_loss", float, "last", "training loss", optional=False),
    RoundValue("ema_acc", float, "last", "test accuracy, EMA-0.9 smoothed (%)", optional=False),
    RoundValue("bytes_down", int, "last", "bytes sent down so far", optional=False),
    RoundValue("bytes_up", int, "last", "bytes sent up so far", optional=False),
    RoundValue("subopt", float, "last", "F(w) − F*"),  # only for `suboptimality: true` jobs
    # on the held-out validation split, only for `select: {on: validation}` jobs
    RoundValue("val_acc", float, "last", "validation accuracy (%)"),
    RoundValue("val_loss", float, "last", "validation loss"),
    # the clocks: when it was measured (epoch seconds; MLflow plots against it), and training seconds up to
    # it across resumes (the report's time axis)
    RoundValue("time", float, "last", "time measured (epoch s)", mlflow=False),
    RoundValue("wall_s", float, "last", "training time (s)", mlflow=False),
)
for _value in BUILT_IN:
    ROUND_VALUES.register(_value)
