"""Method parts declare what they need from each other and from the model (fl/pairing.py):
every pairing either fails validation with a YAML path or trains; shared hyper-parameters have
one value."""

from __future__ import annotations

import pytest
from methods_support import TwoStageMLP, make_sim

from benchmark.cli import main
from benchmark.errors import SuiteError
from benchmark.fl.method import MethodProblems, resolve_method
from benchmark.fl.registry import CLIENT_TERMS, SERVER_RULES
from benchmark.suite.expand import expand
from benchmark.suite.overrides import Overrides
from benchmark.suite.schema import Suite


def composition(rule: str, term: str) -> dict:
    needed = [t for t in SERVER_RULES.get(rule).requires_terms if t != term]
    return {"label": "x", "server": {"rule": rule}, "client": [{"term": t} for t in [*needed, term]]}


@pytest.mark.parametrize("rule", SERVER_RULES.names())
@pytest.mark.parametrize("term", CLIENT_TERMS.names())
def test_every_pairing_is_rejected_up_front_or_trains(rule, term):
    try:
        method = resolve_method(composition(rule, term), "methods[0]")
    except MethodProblems as err:
        assert all(path.startswith("methods[0].") for path, _ in err.problems)
        return
    needs_hidden = any(
        CLIENT_TERMS.get(t.name).needs_features or CLIENT_TERMS.get(t.name).model_traits for t in method.client
    )
    sim = make_sim(method, model=TwoStageMLP() if needs_hidden else None)
    sim.run_round(0)  # no KeyError for a message nobody sent, no missing state
    sim.run_round(1)


@pytest.mark.parametrize(
    "entry, where, says",
    [
        ({"label": "x", "server": {"rule": "scaffold"}}, "methods[0].client", "needs the client term(s) 'scaffold'"),
        (
            {"label": "x", "server": {"rule": "average"}, "client": [{"term": "scaffold"}]},
            "methods[0].client[0]",
            "use server rule 'scaffold'",
        ),
        (
            {"label": "x", "server": {"rule": "average"}, "client": [{"term": "dyn"}]},
            "methods[0].client[0]",
            "only works with the server rule(s) 'dyn'",
        ),
        (
            {"preset": "feddyn", "server": {"alpha": 0.1}, "client": {"dyn": {"alpha": 0.5}}},
            "methods[0].client[0].alpha",
            "set it once, at methods[0].server.alpha",
        ),
    ],
)
def test_invalid_pairings_name_the_yaml_path(entry, where, says):
    with pytest.raises(MethodProblems) as err:
        resolve_method(entry, "methods[0]")
    ((path, message),) = err.value.problems
    assert path == where and says in message


@pytest.mark.parametrize(
    "entry",
    [
        {"preset": "feddyn", "server": {"alpha": 0.5}},
        {"preset": "feddyn", "client": {"dyn": {"alpha": 0.5}}},
        {"label": "x", "server": {"rule": "dyn", "alpha": 0.5}, "client": [{"term": "dyn"}]},
    ],
)
def test_a_shared_hyper_parameter_set_in_one_place_reaches_both_parts(entry):
    method = resolve_method(entry, "methods[0]")
    assert method.param("server.alpha") == method.param("client.dyn.alpha") == 0.5
    assert resolve_method(method, "methods[0]") == method  # a resolved method resolves to itself


def suite(methods, model="logistic", grid=None) -> Suite:
    return Suite(
        name="pairing",
        defaults={"rounds": 1, "num_clients": 4, "model": {"name": model}},
        datasets=[{"name": "synthetic", "params": {"num_users": 4, "dim": 6, "num_classes": 3}}],
        methods=methods,
        grid=grid or {},
    )


def alphas(jobs) -> list[tuple[float, float]]:
    return [(j.config.method.param("server.alpha"), j.config.method.param("client.dyn.alpha")) for j in jobs]


def test_grids_and_command_line_overrides_move_a_shared_parameter_on_both_sides():
    by_method_grid = expand(suite([{"preset": "feddyn", "grid": {"server.alpha": [0.1, 0.2]}}]))
    assert alphas(by_method_grid) == [(0.1, 0.1), (0.2, 0.2)]
    by_suite_grid = expand(suite(["feddyn"], grid={"method.client.dyn.alpha": [0.3]}))
    assert alphas(by_suite_grid) == [(0.3, 0.3)]
    by_set = expand(suite(["feddyn"]), overrides=Overrides.parse(("method.server.alpha=0.4",)))
    assert alphas(by_set) == [(0.4, 0.4)]


@pytest.mark.parametrize("preset", ["moon", "feddecorr", "fedmlb"])
def test_terms_that_need_a_hidden_layer_are_refused_on_a_linear_model(preset):
    with pytest.raises(SuiteError, match=r"methods\[0\].client\[0\].*model 'logistic' lacks it"):
        expand(suite([preset]))
    assert expand(suite([preset], model="femnist_cnn"))


def test_the_cli_reports_an_invalid_pairing_with_exit_code_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ndatasets: [{name: synthetic}]\nmethods: [{label: x, server: {rule: scaffold}}]\n")
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "methods[0].client" in err and "needs the client term(s) 'scaffold'" in err and "Traceback" not in err
