"""What the FedAc protocol adds to a suite, registered here rather than in the generic schema and model
registry: its reference's `authors:` block (the authors' released runs) and the `normal_numpy` init
(their w0)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from benchmark.job.settings import Strict
from benchmark.lazy import nn, torch
from benchmark.models.inits import INITS, Init
from benchmark.suite.schema import REFERENCE_PARTS, ReferencePart


class AuthorsRuns(Strict):
    """Reference values from the authors' released runs of a FedAc-protocol figure (per dataset
    entry, i.e. per K): for each method and number of workers M, their best final F(w) − F* over
    η and that η. Carried in the suite so that a clone without the authors' files reports them."""

    source: str = Field(description="the authors' file the values come from")
    f_star: float = Field(description="F* the suboptimality is measured from (fedbench's Newton solve)")
    # a pair as YAML writes it (a list: strict validation takes no list for a tuple)
    best: dict[str, dict[int, Annotated[list[float], Field(min_length=2, max_length=2)]]] = Field(
        description="method -> M -> [best final F − F*, its η]"
    )
    not_compared: dict[str, str] = Field(
        default_factory=dict, description="method -> why its values are shown but never compared"
    )


def authors_w0(model: nn.Module, seed: int) -> None:
    """The FedAc authors' `np.random.seed(seed); np.random.randn(d)` as the flat weights, bit for bit
    (their seed 1 is their released runs' w0)."""
    params = list(model.parameters())
    flat = np.random.RandomState(seed).randn(sum(p.numel() for p in params))
    torch.nn.utils.vector_to_parameters(torch.from_numpy(flat).to(params[0].dtype), params)


REFERENCE_PARTS.register(ReferencePart("authors", AuthorsRuns))
INITS.register(Init("normal_numpy", authors_w0))
