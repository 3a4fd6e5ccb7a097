"""Where the papers state each setting a suite marks "stated": a verbatim sentence, caption or table
header of the paper's text, with the paper and lines it is on.

A quote is written `NNN:L: text` or `NNN:L-L2: text` (NNN: the paper, PAPER_FILES; L: the line of
its plain-text extraction). `tests/papers/test_paper_quotes.py` checks each one occurs on those
lines, whitespace and hyphens aside (a word broken over two lines). The generator refuses a stated setting no
quote covers: such a setting is a reading (paper_suites.ASSUMED / READ_FROM_TEXT / UNSTATED), not
a statement.
"""

from __future__ import annotations

import re
from pathlib import Path

from benchmark.papers.paper_settings import GenerationError

PAPER_FILES = {
    "000": "fedacg-iclr-draft",
    "001": "fedagm-cvpr",
    "002": "fedacg-final",
    "003": "fedac-yuan-ma",
    "004": "fedcm",
}
ANY = "(any value)"

# FedACG (002 final, 000 ICLR draft: the final text lost most symbols and numbers of its setup)
_ACG_LR = "000:168: For local update, we use the SGD optimizer with a learning rate 0.1 for all approaches on the three benchmarks."
_ACG_WD = "000:168: We apply no momentum for local SGD, but apply weight decay of 0.001 to prevent overfitting."
_ACG_EPOCHS = (
    "000:168: The number of local training epochs over each client update is set to 5, and the batch size is set so "
    "that the total iteration for local updates is set to 50 for all experiments."
)
_ACG_GLOBAL_LR = "002:224: The global learning rate is set to 1, except for FedAdam, which is set to 0.01."
_ACG_SPLITS = (
    "002:86: We generate i.i.d. data splits by randomly assigning training examples to individual clients without "
    "replacement. For non-i.i.d. datasets, we simulate the data heterogeneity by sampling the label ratios from a "
    "Dirichlet distribution with a symmetric parameter, 0.3 or 0.6, following the strategies in Hsu et al. [14]."
)
_ACG_SCALES = (
    "002:109: Our experiments have been performed in two different settings; one is a moderate scale, which involves "
    "100 clients with a 5% participation rate per round, and the other is with a large number of clients, 500 with a "
    "participation rate of 2%."
)
_ACG_LEAF = (
    "002:139: For these experiments, we set the number of clients to 2,000, with data splits following [5], and "
    "randomly select 5 clients to participate in training during each communication round."
)
_ACG_POOL = (
    "002:123: To validate this property, we conduct an experiment, where we maintain 250 clients in each round but "
    "replace half of the clients on average every 100 rounds by setting the replacement probability of each client "
    "to 0.5. The experiment has been performed on CIFAR-100 with Dirichlet (0.3) splits, assuming a participation "
    "ratio of 4% for each communication round."
)
_ACG_DRAFT_POOL = (
    "000:201: In order to validate the property, we conduct an experiment on CIFAR-100 with 500 clients for "
    "Dirichlet(0.3) splits. We sample 250 clients at every 100 rounds as a candidate client set, and then 10 randomly "
    "sampled clients (4% of clients) participate in the local training for each communication round."
)
_ACG_LOWPART = (
    "002:121: To verify the robustness of FedACG to low client participation rates, we conduct experiments with 500 "
    "clients and a participation rate as low as 1%."
)
_ACG_DRAFT_LOWPART = (
    "000:153: Table 2: Effect of low participation rate, 1% over 500 clients with Dirichlet (0.3) split, for FedACG "
    "and the baselines on CIFAR-10 and CIFAR-100."
)
_ACG_DRAFT_SWEEP = (
    "000:209: Table 5: Ablation study of FedACG to the weights of the two hyperparameters, λ (a) and β (b), with "
    "respect to the accuracy at 1000th rounds on CIFAR-10 in 2% participation and 500 clients."
)
_ACG_ROUNDS = (
    "000:151: For the selection of target accuracies, we first choose the median of all methods at round 1000 and "
    "another representative value lower than the median."
)
_ACG_SHAKESPEARE = (
    "002:140: We adopt an LSTM as the backbone network, and the client participation rate per round is set to 5%."
)
TABLE = ("dataset.name", "dataset.split.kind", "dataset.split.alpha", "num_clients", "participation.rate")
TABLE += ("participation.per_round", "rounds")


def _say(pattern: str, paths, quote: str, value=ANY, method: str | None = None) -> list[tuple]:
    """Entries giving `quote` for each of `paths` in the tables `pattern` matches."""
    return [(pattern, method, path, value, quote) for path in ([paths] if isinstance(paths, str) else paths)]


_CLIENTS = ("num_clients", "participation.rate", "participation.per_round")
_ACG = [
    *_say(r"fedacg_iclr\.dynamic_clients\..*", (*_CLIENTS, "participation.mode", "dataset.name"), _ACG_DRAFT_POOL),
    *_say(r"fedacg_iclr\.dynamic_clients\..*", ("dataset.split.kind", "dataset.split.alpha"), _ACG_DRAFT_POOL),
    *_say(r"fedacg_iclr\.dynamic_clients\..*", "participation.pool.", _ACG_DRAFT_POOL),
    *_say(r"fedacg_iclr\.lowpart.*", _CLIENTS, _ACG_DRAFT_LOWPART),
    *_say(r"fedacg(_iclr)?\.(lambda|beta)_sensitivity.*", _CLIENTS, _ACG_DRAFT_SWEEP),
    *_say(
        r"fedacg\.ablation_components\..*",
        _CLIENTS,
        "000:191: Table 4: Contribution of individual components in FedACG at 1000^{th} rounds on CIFAR-10 and "
        "CIFAR-100 with 2% participation and 500 clients.",
    ),
    *_say(r"fedacg\.dynamic_pool_final\..*", ("participation.rate", "participation.per_round"), _ACG_POOL),
    *_say(r"fedacg\.dynamic_pool_final\..*", ("participation.pool.", "dataset.name", "dataset.split."), _ACG_POOL),
    *_say(
        r"fedacg\.lowpart_1pct\..*", "num_clients", "002:92: 100 clients | 500 clients | 100 clients | 500 clients |"
    ),
    *_say(r"fedacg\.lowpart_1pct\..*_500clients", ("participation.rate", "participation.per_round"), _ACG_LOWPART),
    *_say(r"fedacg\.leaf\.(femnist|celeba)", (*_CLIENTS, "participation.mode"), _ACG_LEAF),
    *_say(r"fedacg\.leaf\.(femnist|celeba)", "rounds", "002:143: 500R | 78% | 500R | 88% |", 500),
    *_say(
        r"fedacg\.leaf\..*",
        "dataset.name",
        "002:86: For FEMNIST, CelebA, and ShakeSpeare, we use the non-i.i.d. data splits provided by LEAF.",
    ),
    *_say(
        r"fedacg\.leaf\..*",
        "dataset.split.kind",
        "002:86: For FEMNIST, CelebA, and ShakeSpeare, we use the non-i.i.d. data splits provided by LEAF.",
        "natural",
    ),
    *_say(
        r"fedacg\.leaf\.(femnist|celeba)",
        "model.name",
        "002:139: We employ a two-layer CNN for FEMNIST and a four-layer CNN for CelebA.",
    ),
    *_say(r"fedacg\.leaf\.shakespeare", ("model.name", "participation.rate"), _ACG_SHAKESPEARE),
    *_say(r"fedacg\.leaf\.shakespeare", "rounds", "002:155: 500R | 1000R | 42% | 45% |", 1000),
    *_say(r"fedacg\.(moderate|large|plus_acg).*", _CLIENTS, _ACG_SCALES),
    *_say(r"fedacg.*", "rounds", _ACG_ROUNDS, 1000),
    *_say(
        r"fedacg.*",
        "dataset.name",
        "002:86: We conduct a set of experiments on three datasets, CIFAR-10 [20], CIFAR-100 [20], and Tiny-ImageNet "
        "[21], with different levels of data heterogeneity and participation rates.",
    ),
    *_say(r"fedacg.*", ("dataset.split.kind", "dataset.split.alpha"), _ACG_SPLITS),
    *_say(
        r"fedacg.*",
        "model.name",
        "002:88: The standard ResNet-18 [12] is employed as our backbone network for all experiments after replacing "
        "the batch normalization with the group normalization, following Hsieh et al. [13].",
        "resnet18_gn",
    ),
    *_say(r"fedacg.*", "local.lr", _ACG_LR, 0.1),
    *_say(r"fedacg.*", "local.weight_decay", _ACG_WD, 0.001),
    *_say(r"fedacg.*", "local.epochs", _ACG_EPOCHS, 5),
    *_say(r"fedacg.*", "local.iterations", _ACG_EPOCHS, 50),
    *(
        entry
        for b in (50, 10)
        for entry in _say(
            r"fedacg.*",
            "local.batch_size",
            "002:224: We set the batch size of the local update to 50 and 10 for the 100 and 500 client "
            "participation, respectively.",
            b,
        )
    ),
    *(
        entry
        for b in (100, 20)
        for entry in _say(
            r"fedacg.*",
            "local.batch_size",
            "002:225: For the experiments on Tiny-ImageNet, we match the total local iterations of local updates with "
            "other benchmarks by setting the batch size of local updates as 100 and 20 for the 100 and 500 client "
            "participation, respectively.",
            b,
        )
    ),
    *_say(r"fedacg.*", "method.server.global_lr", _ACG_GLOBAL_LR),
    *_say(
        r"fedacg.*",
        "method.server.tau",
        "000:515: τ in FedAdam is set to 0.001 while μ in MOON is set to 1.",
        0.001,
        "FedAdam",
    ),
    *_say(
        r"fedacg.*",
        "method.client.moon.mu",
        "000:515: τ in FedAdam is set to 0.001 while μ in MOON is set to 1.",
        1.0,
        "MOON",
    ),
    *_say(r"fedacg.*", "method.client.feddc.alpha", "000:515: and α in FedDC is set to 0.01.", 0.01, "FedDC"),
]

# FedAGM (001: two-column text, sentences run over several lines). Each table's caption states its dataset,
# clients, rate and split, its header the rounds of its last accuracy column.
_AGM_SETUP = "001:553-566"
_AGM_TABLES = [
    (
        r"fedagm\.moderate.*",
        "001:510-511: Table 2. Comparison of FedAGM with baselines on CIFAR-10, CIFAR-100, Tiny-ImageNet with a "
        "moderate number of clients. In these experiments, the number of clients, participation rate, and Dirichlet "
        "parameter are set to 100, 5%, and 0.3, respectively.",
        "001:519: 500R 1000R 84% 87% 500R 1000R 47% 53%",
    ),
    (
        r"fedagm\.large.*",
        "001:529-530: Table 3. Comparison of FedAGM with baselines on CIFAR-10, CIFAR-100, Tiny-ImageNet with a large "
        "number of clients. In these experiments, number of clients, participation rate, and Dirichlet parameter are "
        "set to 500, 2%, and 0.3, respectively.",
        "001:536: 500R 1000R 73% 77% 500R 1000R 36% 40%",
    ),
    (
        r"fedagm\.lowpart_1pct_100clients\.cifar10",
        "001:607-609: Table 4. Comparison of FedAGM with baselines on CIFAR-10 for more limited participation rate "
        "(1%). The number of clients, and Dirichlet parameter is set to 100, and 0.3, respectively.",
        "001:612: 1000R 70%",
    ),
    (
        r"fedagm\.lowpart_1pct_100clients\.cifar100",
        "001:622-624: Table 5. Comparison of FedAGM with baselines on CIFAR-100 for more limited participation rate "
        "(1%). The number of clients, and Dirichlet parameter is set to 100, and 0.3, respectively.",
        "001:627: 1000R 40%",
    ),
    (
        r"fedagm\.dir0\.6.*\.cifar10",
        "001:677-678: Table 6. Comparison of FedAGM with baselines on CIFAR-10 with 100 clients of Dirichlet 0.6 split "
        "on 10%, 5%, and 1% client participation.",
        "001:686: 500R 1000R 83% 87% 500R 1000R 81% 85% 500R 1000R 71% 75%",
    ),
    (
        r"fedagm\.iid.*\.cifar10",
        "001:696: Table 7. Comparison of FedAGM with baselines on CIFAR-10 with 100 clients of IID split on 10%, 5%, "
        "and 1% client participation.",
        "001:705: 500R 1000R 84% 88% 500R 1000R 82% 86% 500R 1000R 82% 86%",
    ),
    (
        r"fedagm\.dir0\.6.*\.cifar100",
        "001:770-771: Table 8. Comparison of FedAGM with baselines on CIFAR-100 with 100 clients of Dirichlet 0.6 "
        "split on 10%, 5%, and 1% client participation.",
        "001:779: 500R 1000R 56% 60% 500R 1000R 54% 58% 500R 1000R 38% 42%",
    ),
    (
        r"fedagm\.iid.*\.cifar100",
        "001:789: Table 9. Comparison of FedAGM with baselines on CIFAR-100 with 100 clients of IID split on 10%, 5%, "
        "and 1% client participation.",
        "001:798: 500R 1000R 56% 60% 500R 1000R 52% 56% 500R 1000R 42% 48%",
    ),
    (
        r"fedagm\.lowpart_1pct_500clients.*",
        "001:877-878: Table 12. Comparison of federated learning methods on CIFAR-10 and CIFAR-100 with the large "
        "number of clients (500): Dirichlet (0.3) split on low client participation (1%).",
        "001:886: 500R 1000R 64% 68% 500R 1000R 30% 35%",
    ),
    (
        r"fedagm\.local_iters.*",
        "001:899-901: We evaluate the accuracy and communication-efficiency of the proposed method with aggravated "
        "client heterogeneity by varying the number of local iterations, i.e., K ∈ {50, 70, 100}, on CIFAR-100. In "
        "this experiments, the number of clients, participation rate, and Dirichlet parameter is set to 100, 5% and "
        "0.3, respectively.",
        "001:913: 500R 1000R 47% 53% 500R 1000R 47% 53% 500R 1000R 47% 53%",
    ),
]
_AGM_REG = (  # Table 11 names no split: the suite's Dirichlet(0.3) is a reading (paper_suites.ASSUMED)
    "001:817-819: Table 11. Effect of regularization at local objective function on CIFAR-100. ’P’ and ’C’ "
    "denotes participation rate and number of clients, respectively."
)
_AGM = [
    *_say(r"fedagm\.local_reg_ablation.*", (*_CLIENTS, "dataset.name"), _AGM_REG),
    *_say(r"fedagm\.local_reg_ablation.*", "rounds", "001:822: 1000R 42%", 1000),
    *_say(r"fedagm\.local_iters.*", "local.iterations", _AGM_TABLES[-1][1]),
    *(entry for pattern, caption, _ in _AGM_TABLES for entry in _say(pattern, TABLE[:-1], caption)),
    *(entry for pattern, _, header in _AGM_TABLES for entry in _say(pattern, "rounds", header, 1000)),
    *_say(
        r"fedagm\.lambda_sensitivity.*",
        ("dataset.name", "num_clients", "participation.rate", "participation.per_round", "rounds"),
        "001:761-764: we evaluate the generalization performance of FedAGM after 1000 rounds varying λ as {0.75, "
        "0.8, 0.85, 0.9, 0.95} on CIFAR-10 with 500 clients of different data splits on 2% participation.",
    ),
    *_say(
        r"fedagm\.lambda_sensitivity.*",
        ("dataset.split.kind", "dataset.split.alpha"),
        "001:812-815: Dirichlet (0.3) 81.32 82.52 82.80 81.82 78.25 Dirichlet (0.6) 83.97 84.89 85.28 84.56 82.07 "
        "IID 85.52 86.92 86.83 87.08 84.37",
    ),
    *_say(
        r"fedagm.*",
        "model.name",
        "001:491-494: We adopt a standard ResNet-18 [6] as backbone network for all benchmarks, but we replace batch "
        "normalization by group normalization as suggested in [7].",
        "resnet18_gn",
    ),
    *_say(
        r"fedagm.*",
        "local.lr",
        f"{_AGM_SETUP}: For local update, we use the SGD optimizer with a learning rate 0.1 for all approaches on the "
        "three benchmarks.",
        0.1,
    ),
    *_say(
        r"fedagm.*",
        "local.weight_decay",
        f"{_AGM_SETUP}: We apply no momentum for local SGD, but apply weight decay of 0.001 to prevent overfitting.",
        0.001,
    ),
    *(
        entry
        for path, value in (("local.epochs", 5), ("local.iterations", 50))
        for entry in _say(
            r"fedagm.*",
            path,
            f"{_AGM_SETUP}: The number of local training epochs over each client update is set to 5, and the batch "
            "size is set so that the total iteration for local updates is set to 50 for all experiments.",
            value,
        )
    ),
    *_say(
        r"fedagm.*",
        "method.server.global_lr",
        f"{_AGM_SETUP}: We set the global learning rate as 1 for all methods except for FedADAM which is set to 0.01.",
    ),
]

# FedCM (004)
_CM_SETTINGS = (
    "004:249: the experiments are performed on two different federated learning settings: in setting I, we have 100 "
    "clients with 10% participation rate; in setting II, we have 500 clients, with 2% participation rate. In each "
    "round, each client is activated independently of each other, with probability 0.1 and 0.02 respectively."
)
_CM_SPLITS = (
    "004:249: For the iid version, we randomly assign training data to each clients; for the non-iid version, We "
    "simulate the data heterogeneity by sampling the label ratios from a Dirichlet distribution with parameter 0.6 "
    "[Hsu et al., 2019]."
)
_CM10 = "004:644"
_CM100 = "004:646"
_CM = [
    (r"fedcm.*", None, "participation.", ANY, _CM_SETTINGS),
    (r"fedcm.*", None, "num_clients", ANY, _CM_SETTINGS),
    (r"fedcm.*", None, "dataset.split.", ANY, _CM_SPLITS),
    (
        r"fedcm.*",
        None,
        "dataset.name",
        ANY,
        "004:249: We evaluate our method on CIFAR10 and CIFAR100 [Krizhevsky et al., 2009] datasets, with usual "
        "train/test splits.",
    ),
    (
        r"fedcm.*",
        None,
        "rounds",
        4000,
        "004:251: we report the test accuracy after 4000 communication rounds in all experiments instead of the "
        "training loss.",
    ),
    (r"fedcm.*", None, "local.weight_decay", 0.001, "004:640: We apply weight decay of 0.001 to prevent overfitting."),
    (r"fedcm.*", "FedAdam", "method.server.tau", 0.01, "004:642: $\\tau$ in FedAdam is set to 0.01."),
    (
        r"fedcm\.(settingI|alpha_sensitivity).*",
        None,
        "method.client.fedcm.alpha",
        0.1,
        f"{_CM10}: We choose $\\alpha = 0.1$ in FedCM for 100 devices 10% participation Dirichlet 0.6 setting, and "
        "$\\alpha = 0.05$ for other settings.",
    ),
    (
        r"fedcm.*\.cifar10",
        None,
        "method.client.fedcm.alpha",
        0.05,
        f"{_CM10}: We choose $\\alpha = 0.1$ in FedCM for 100 devices 10% participation Dirichlet 0.6 setting, and "
        "$\\alpha = 0.05$ for other settings.",
    ),
    (
        r"fedcm.*\.cifar10",
        None,
        "local.",
        ANY,
        f"{_CM10}: For experiments on CIFAR10 dataset, we choose 5 as the number of local training epochs, 50 as "
        "batchsize and 0.1 as local learning rate $\\eta_l$ . The learning rate decay parameter is set to 0.998 except "
        "for FedDyn, which is set to 0.9995.",
    ),
    (
        r"fedcm.*\.cifar10",
        None,
        "method.server.global_lr",
        ANY,
        f"{_CM10}: The global learning rate $\\eta_g$ is set to 1.0 except for FedAdam, which is set to 0.1.",
    ),
    (
        r"fedcm.*\.cifar10",
        "FedDyn",
        "method.",
        0.01,
        f"{_CM10}: We select $\\alpha = 0.1$ in FedAdam and $\\alpha = 0.01$ in FedDyn for all settings.",
    ),
    (
        r"fedcm.*\.cifar100",
        None,
        "local.epochs",
        ANY,
        f"{_CM100}: For experiments on CIFAR100 dataset, we choose 2 as the number of local training epochs, except "
        "for FedCM in 500 devices 2% participation setting where we choose 5.",
    ),
    (
        r"fedcm.*\.cifar100",
        None,
        "local.batch_size",
        ANY,
        f"{_CM100}: The batchsize is set to 50 for FedCM and FedAdam, and set to 20 for other methods.",
    ),
    (r"fedcm.*\.cifar100", None, "local.lr", 0.1, f"{_CM100}: We choose 0.1 as local learning rate $\\eta_l$ ."),
    (
        r"fedcm.*\.cifar100",
        None,
        "local.lr_decay",
        ANY,
        f"{_CM100}: The learning rate decay parameter is set to 0.999 for FedDyn and 0.998 for others.",
    ),
    (
        r"fedcm.*\.cifar100",
        None,
        "method.server.global_lr",
        ANY,
        f"{_CM100}: The global learning rate $\\eta_g$ is set to 0.1 for FedAdam, and 1.0 for others.",
    ),
    (
        r"fedcm.*\.cifar100",
        None,
        "method.client.fedcm.alpha",
        0.05,
        f"{_CM100}: We choose $\\alpha = 0.05$ for FedCM and $\\alpha = 0.1$ for FedAdam.",
    ),
    (
        r"fedcm.*\.cifar100",
        "FedDyn",
        "method.",
        ANY,
        f"{_CM100}: For FedDyn, we choose $\\alpha = 0.01$ in 100 devices 10% participation setting, and $\\alpha = "
        "0.001$ in 500 devices 2% participation setting.",
    ),
]

# FedAc (003)
_AC = [
    (
        r"fedac\.exp\.linear_speedup",
        None,
        "local.weight_decay",
        0.001,
        "003:255: The regularization strength is set as $10^{-3}$ .",
    ),
    (
        r"fedac\.exp\.vanilla_vs_stable",
        None,
        "local.weight_decay",
        0.0001,
        "003:260: We test on the UCI “adult” a9a dataset with $\\ell_2$ -regularization strength $\\lambda$ taken to "
        "be $10^{-4}$ .",
    ),
    (
        r"fedac\.exp\.linear_speedup",
        None,
        "local.steps",
        ANY,
        "003:255: We test the settings of $M = 2^2, \\dots, 2^{13}$ workers and $K = 2^0, \\dots, 2^8$ "
        "synchronization interval.",
    ),
    (
        r"fedac\.exp\.vanilla_vs_stable",
        None,
        "local.steps",
        ANY,
        "003:260: We test the settings of $M = 2^4, \\dots, 2^{13}$ and $K = 2^0, \\dots, 2^8$ .",
    ),
    (
        r"fedac\..*",
        None,
        "model.name",
        "binary_logistic",
        "003:255: on $\\ell_2$ -regularized logistic regression for UCI a9a dataset [Dua and Graff, 2017] from LibSVM "
        "[Chang and Lin, 2011].",
    ),
]

# (table id, re.fullmatch; method or None for any; setting path or its prefix ending in "."; the value it
# states or ANY; the quote). The first entry that matches a setting is its quote.
QUOTES = [*_ACG, *_AGM, *_CM, *_AC]


def _matches(entry, table_id: str, method: str | None, path: str, value) -> bool:
    pattern, who, setting, said, _ = entry
    covers = path == setting or setting.endswith(".") and path.startswith(setting)
    return bool(re.fullmatch(pattern, table_id) and who in (None, method) and covers and (said == ANY or said == value))


def quote_of(table_id: str, method: str | None, path: str, value) -> str | None:
    """The quote stating `path = value` for `method` (None: every method) in this table, or None."""
    return next((e[4] for e in QUOTES if _matches(e, table_id, method, path, value)), None)


def quotes_for(table_id: str, stated: dict[str, dict]) -> dict[str, dict[str, str]]:
    """`stated`'s shape ({"all" or method: {path: value}}) with each value's quote; a GenerationError
    names the first stated setting no quote covers."""
    out: dict[str, dict[str, str]] = {}
    for who, values in stated.items():
        for path, value in values.items():
            quote = quote_of(table_id, None if who == "all" else who, path, value)
            if quote is None:
                raise GenerationError(
                    f"{table_id}: stated {who} {path} = {value!r} has no quote of the paper's text "
                    "(benchmark/papers/paper_quotes.py QUOTES); if no sentence states it, it is a reading "
                    "(paper_suites.ASSUMED / READ_FROM_TEXT / UNSTATED)"
                )
            out.setdefault(who, {})[path] = quote
    return out


_QUOTE = re.compile(r"(\d{3}):(\d+)(?:-(\d+))?: (.+)", re.S)


def parse(quote: str) -> tuple[str, int, int, str]:
    """(paper number, first line, last line, text) of a quote."""
    m = _QUOTE.fullmatch(quote)
    if not m or m.group(1) not in PAPER_FILES:
        raise ValueError(f"not a quote 'NNN:L[-L2]: text' of a known paper ({', '.join(PAPER_FILES)}): {quote!r}")
    first = int(m.group(2))
    return m.group(1), first, int(m.group(3) or first), m.group(4)


def normalised(text: str) -> str:
    """Whitespace collapsed and hyphens dropped, so that a line break inside a word ('overfit- ting',
    'ResNet- 18') matches the word written whole: the only liberties a quote takes with the text."""
    return re.sub(r"- ?", "", " ".join(text.split()))


def unquoted(quote: str, papers: Path) -> str | None:
    """None when the quote occurs on its lines of the paper's text in `papers`, else why not."""
    paper, first, last, text = parse(quote)
    lines = (papers / f"{PAPER_FILES[paper]}.txt").read_text(encoding="utf-8").splitlines()
    if last > len(lines):
        return f"{paper} has {len(lines)} lines, the quote cites {first}-{last}"
    if normalised(text) not in normalised(" ".join(lines[first - 1 : last])):
        return f"not on {paper}:{first}-{last}: {text!r}"
    return None
