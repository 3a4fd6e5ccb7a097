"""`compile: true` trains to the eager path's numbers (CPU: inductor's C++ kernels, float rounding apart)."""

from __future__ import annotations

import pytest
import torch
from fedtest import job_config
from pydantic import ValidationError

from benchmark.engine.setup import build_simulation
from benchmark.suite.expand import job_id


@pytest.mark.slow  # torch.compile's first call takes 10-40 s on CPU
def test_compiled_local_step_gives_the_eager_numbers():
    eager_config = job_config("fedavg", rounds=2)
    eager = build_simulation(eager_config)
    eager_records = eager.run()
    fast = build_simulation(eager_config.model_copy(update={"compile": True}))
    fast_records = fast.run()
    torch.testing.assert_close(fast.progress.theta, eager.progress.theta, rtol=0, atol=1e-5)
    for a, b in zip(fast_records, eager_records):
        assert a["test_acc"] == b["test_acc"] and a["test_loss"] == pytest.approx(b["test_loss"], rel=1e-5)


def test_compile_is_an_execution_setting():
    config = job_config("fedavg")
    assert job_id(config.model_copy(update={"compile": True})) == job_id(config)
    assert config.model_dump()["compile"] is False, "recorded in config.json like every setting that is not identity"
    for execution in ("vectorised", "auto"):
        with pytest.raises(ValidationError, match="execution: sequential"):  # the suite's defaults are validated
            job_config("fedavg", compile=True, execution=execution)
