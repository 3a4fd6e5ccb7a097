"""The public API: what a plugin (a method, model, dataset or executor in the user's own package)
imports. Also importable as `fedbench` (a research repository often has a `benchmark/` of its
own): `from fedbench import ServerRule, StrictParams, register_server_rule`. The names here are
the stable surface; the modules behind them may move.

Registering functions (each usable as a class decorator, except where it takes a name):
  register_server_rule / register_client_term / register_codec   method parts (benchmark/fl/base.py)
  register_preset(key, label, server, client, uplink), register_modifier(key, label, **parts)
  register_model(name, "module:factory", traits)                 a model's factory, imported to build it
  register_dataset(DatasetSpec(...))                             a dataset (benchmark/data/source.py)
  register_executor                                              where jobs run (benchmark/run/executor_base.py)
  register_round_value(RoundValue(...))                          a per-round value (benchmark/round_values.py)
  register_report_output                                         a file `fedbench report` writes (benchmark/report/report_output.py)
A plugin module is named by an entry point of the group `fedbench.plugins` or a suite's
`plugins:` (benchmark/plugins.py). A randomised part draws from `ctx.rng()` (ClientContext) or
`rnd.rng(device)` (RoundInfo): streams seeded per job seed, round and client, as built-ins' are. Importing this module does not import torch: use `torch`,
`nn` and `F` from here (bound on first use) in code that a suite's validation imports.
"""

from benchmark.data.archive import Found
from benchmark.data.source import DATASETS, DatasetSpec, SourceData
from benchmark.errors import DataInvalid, DatasetMissing, UserError
from benchmark.fl.base import ClientContext, ClientTerm, Codec, ForwardOut, RoundInfo, ServerRule, Uploads
from benchmark.fl.presets import register_modifier, register_preset
from benchmark.fl.registry import CLIENT_TERMS, CODECS, SERVER_RULES
from benchmark.lazy import F, nn, torch
from benchmark.models.registry import register_model
from benchmark.params import StrictParams
from benchmark.report.report_output import ReportInputs, ReportOutput, register_report_output
from benchmark.round_values import RoundValue, register_round_value
from benchmark.run.executor_base import EXECUTORS, Executor

register_server_rule = SERVER_RULES.register
register_client_term = CLIENT_TERMS.register
register_codec = CODECS.register
register_dataset = DATASETS.register
register_executor = EXECUTORS.register


def run_jobs(jobs, suite: str, store, device="cpu", tracker=None, progress=None, stop_after=None) -> dict:
    """The local executor's loop (benchmark/run/executor.py): job id -> its typed summary (store/records.py).
    `store`: the results folder as an executor's `run` is given it (a `Store`, store/layout.py).
    Imported on the first call, as it needs torch."""
    from benchmark.run import executor

    return executor.run_jobs(jobs, suite, store, device, tracker, progress, stop_after)


__all__ = [
    "ClientContext",
    "ClientTerm",
    "Codec",
    "DataInvalid",
    "DatasetMissing",
    "DatasetSpec",
    "Executor",
    "F",
    "ForwardOut",
    "Found",
    "ReportInputs",
    "ReportOutput",
    "RoundInfo",
    "RoundValue",
    "ServerRule",
    "SourceData",
    "StrictParams",
    "Uploads",
    "UserError",
    "nn",
    "register_client_term",
    "register_codec",
    "register_dataset",
    "register_executor",
    "register_model",
    "register_modifier",
    "register_preset",
    "register_report_output",
    "register_round_value",
    "register_server_rule",
    "run_jobs",
    "torch",
]
