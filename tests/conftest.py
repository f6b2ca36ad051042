import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state, so a failure reproduces."""
    torch.manual_seed(0)
