"""Every setting a paper suite marks "stated" carries a verbatim quote of the paper, and each quote is on
the lines it cites of the paper's text (issue 36 point 3)."""

from __future__ import annotations

import copy

import pytest
import yaml
from fedtest import REPO
from test_paper_suites import PAPER_SUITES, REFERENCE, jobs_of, needs_reference

from benchmark.papers.audit import audit
from benchmark.papers.paper_quotes import PAPER_FILES, parse, unquoted
from benchmark.papers.paper_settings import GenerationError
from benchmark.papers.paper_suites import suites_from


def stated_quotes():
    """(suite file, table, method, setting, its quote or None) for every stated setting of the committed suites."""
    for path in PAPER_SUITES:
        for entry in yaml.safe_load(path.read_text())["datasets"]:
            ref = entry.get("reference") or {}
            for who, values in ref.get("stated", {}).items():
                for setting in values:
                    quote = ref.get("quotes", {}).get(who, {}).get(setting)
                    yield path.name, ref["source"], who, setting, quote


def test_every_stated_setting_carries_a_quote_of_a_known_paper():
    rows = list(stated_quotes())
    assert len(rows) > 1000  # every paper suite's stated settings, not an empty walk
    assert [r[:4] for r in rows if r[4] is None] == []
    assert {parse(r[4])[0] for r in rows} == set(PAPER_FILES)


@pytest.mark.papers
def test_every_quote_is_on_the_lines_it_cites(papers_root):
    quotes = {r[4] for r in stated_quotes()}
    assert {q: why for q in sorted(quotes) if (why := unquoted(q, papers_root))} == {}


def test_a_changed_word_or_a_wrong_line_is_not_a_quote(tmp_path):
    """Whitespace and a hyphen at a line break are forgiven; a changed word or line is not."""
    (tmp_path / "fedcm.txt").write_text("Setup.\nWe apply weight decay of 0.001 to prevent overfit-\n  ting. Done.\n")
    assert unquoted("004:2-3: We apply weight decay of 0.001 to prevent overfitting.", tmp_path) is None
    assert "not on 004:2-3" in unquoted("004:2-3: We apply weight decay of 0.01 to prevent overfitting.", tmp_path)
    assert "not on 004:1" in unquoted("004:1: We apply weight decay of 0.001", tmp_path)
    assert "cites 3-9" in unquoted("004:3-9: ting.", tmp_path)
    with pytest.raises(ValueError, match="not a quote"):
        parse("007:1: a paper the project does not have")


@needs_reference
def test_a_stated_setting_no_quote_covers_stops_generation(tmp_path):
    """FedCM states 4000 rounds; a table claiming 3000 has no sentence to quote, so the generator refuses it."""
    table = copy.deepcopy(yaml.safe_load((REFERENCE / "fedcm.yaml").read_text())["tables"][0])
    table["setting"]["rounds"] = 3000
    (tmp_path / "fedcm.yaml").write_text(yaml.safe_dump({"tables": [table]}))
    with pytest.raises(GenerationError, match="stated all rounds = 3000 has no quote"):
        suites_from([tmp_path / "fedcm.yaml"])


def test_the_audit_shows_each_stated_setting_with_its_quote():
    rows = audit(*jobs_of("fedcm.settingII_iid"))
    tau = {r.reason for r in rows if r.setting == "method.server.tau" and r.status == "stated"}
    assert tau == {"004:642: $\\tau$ in FedAdam is set to 0.01."}
    stated = [r for r in rows if r.status == "stated" and not r.reason.startswith("n/a")]
    assert stated and all(parse(r.reason) for r in stated)


@pytest.mark.parametrize(
    "name, method, setting, status",
    [
        ("fedcm.settingI_iid", None, "model.name", "chosen"),  # FedCM's text names no network
        ("fedacg.moderate_dir0.3", None, "participation.mode", "read from the text"),  # a rate, not a count
        ("fedacg.moderate_dir0.3", "FedNTD", "method.client.ntd.beta", "assumed"),  # the symbol is lost
        ("fedacg.quantization", None, "num_clients", "chosen"),  # Table 6 is absent from the paper
        ("fedagm.local_reg_ablation", None, "dataset.split.alpha", "assumed"),  # Table 11 names no split
    ],
)
def test_settings_no_sentence_states_are_readings_not_stated(name, method, setting, status):
    suite = yaml.safe_load((REPO / "suites" / "papers" / f"{name}.yaml").read_text())
    for entry in suite["datasets"]:
        ref = entry["reference"]
        assert setting not in ref["stated"].get(method or "all", {})
        (reading,) = [c for c in ref["chosen"] if c["setting"] == setting and c.get("method") == method]
        assert reading["status"] == status and reading["reason"]


def test_leaf_tables_that_say_how_many_clients_are_drawn_keep_it_stated():
    (femnist, celeba, shakespeare) = yaml.safe_load((REPO / "suites/papers/fedacg.leaf.yaml").read_text())["datasets"]
    for entry in (femnist, celeba):
        assert entry["reference"]["stated"]["all"]["participation.mode"] == "fixed"
        assert "randomly select 5 clients" in entry["reference"]["quotes"]["all"]["participation.mode"]
    assert "participation.mode" not in shakespeare["reference"]["stated"]["all"]  # 'rate per round is set to 5%'
