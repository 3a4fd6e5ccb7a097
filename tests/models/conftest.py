import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """These tensors are tiny: intra-op threads only add contention on a shared CPU (10-30x slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
