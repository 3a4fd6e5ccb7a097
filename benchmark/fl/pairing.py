"""Checks that a method's parts fit together, from what each part declares (fl/base.py).

A server rule names the messages it broadcasts and consumes and the client terms it needs; a
client term names the messages it reads and produces, the rules it works with and the model
traits it needs. An invalid pairing is reported with the YAML path of the part at fault, when
the suite is validated, instead of a KeyError in round 0 or a run that silently equals FedAvg.
"""

from __future__ import annotations

from benchmark.fl.registry import CLIENT_TERMS, SERVER_RULES
from benchmark.fl.spec import MethodSpec


def _names(items) -> str:
    return ", ".join(repr(i) for i in items)


def pairing_problems(method: MethodSpec, path: str) -> list[tuple[str, str]]:
    """Problems of a method's server rule and client terms together."""
    rule_name = method.server.name
    rule = SERVER_RULES.get(rule_name)
    terms = [(i, CLIENT_TERMS.get(t.name)) for i, t in enumerate(method.client)]
    term_names = {t.name for _, t in terms}
    problems = []
    missing = [name for name in rule.requires_terms if name not in term_names]
    if missing:
        problems.append(
            (
                f"{path}.client",
                f"server rule {rule_name!r} needs the client term(s) {_names(missing)} "
                f"(e.g. preset {missing[0]!r} pairs them)",
            )
        )
    produced = {m for _, t in terms for m in t.produces}
    for message in rule.consumes:
        if message not in produced and not missing:
            problems.append(
                (
                    f"{path}.server",
                    f"server rule {rule_name!r} aggregates the uplink message {message!r}, "
                    "which none of the client terms sends",
                )
            )
    for i, term in terms:
        where = f"{path}.client[{i}]"
        if term.requires_rules and rule_name not in term.requires_rules:
            problems.append(
                (
                    where,
                    f"client term {term.name!r} only works with the server rule(s) "
                    f"{_names(term.requires_rules)}, not {rule_name!r}",
                )
            )
            continue
        unsent = [m for m in term.reads if m not in rule.broadcasts]
        if unsent:
            senders = sorted(r for r in SERVER_RULES.names() if set(unsent) <= set(SERVER_RULES.get(r).broadcasts))
            problems.append(
                (
                    where,
                    f"client term {term.name!r} reads {_names(unsent)}, which server rule {rule_name!r} "
                    f"does not broadcast; use server rule {' or '.join(map(repr, senders))}",
                )
            )
    return problems


def share_params(method: MethodSpec, touched: set[str], path: str) -> tuple[MethodSpec, list[tuple[str, str]]]:
    """The method with each hyper-parameter its server rule shares with a client term made one value.

    `touched` holds the method-relative paths the user set ("server.alpha", "client.dyn.alpha" or
    "client.0.alpha"): a value set in one place is copied to the other; two different values set
    in both places are a problem.
    """
    rule = SERVER_RULES.get(method.server.name)
    server, client = method.server, list(method.client)
    problems = []
    for name in rule.shared_params:
        for i, term in enumerate(client):
            if term.name not in rule.requires_terms or name not in type(term.params).model_fields:
                continue
            server_value, term_value = getattr(server.params, name), getattr(term.params, name)
            server_set = f"server.{name}" in touched
            term_set = bool({f"client.{i}.{name}", f"client.{term.name}.{name}"} & touched)
            if server_set and term_set and server_value != term_value:
                problems.append(
                    (
                        f"{path}.client[{i}].{name}",
                        f"{name} is one hyper-parameter of server rule "
                        f"{rule.name!r} and client term {term.name!r}: set it once, at {path}.server.{name} "
                        f"(given {server_value} there and {term_value} here)",
                    )
                )
            elif term_set:  # the same quantity, validated on the other side already
                server = server.with_params(**{name: term_value})
            else:
                client[i] = term.with_params(**{name: server_value})
    return method.model_copy(update={"server": server, "client": client}), problems


def model_problems(method: MethodSpec, model: str, traits: frozenset[str], path: str) -> list[tuple[str, str]]:
    """Client terms that need a model trait `model` lacks (MOON on a model without a hidden layer)."""
    problems = []
    for i, spec in enumerate(method.client):
        term = CLIENT_TERMS.get(spec.name)
        needed = set(term.model_traits) | ({"features"} if term.needs_features else set())
        lacking = sorted(needed - traits)
        if lacking:
            what = {
                "features": "a learned hidden layer (its features are the model's input, so the term would "
                "leave training unchanged)",
                "stages": "the stage protocol (models/registry.py)",
            }
            problems.append(
                (
                    f"{path}.client[{i}]",
                    f"client term {term.name!r} needs {'; '.join(what.get(t, t) for t in lacking)}; "
                    f"model {model!r} lacks it",
                )
            )
    return problems
