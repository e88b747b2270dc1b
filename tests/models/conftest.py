"""Every model test on one torch intra-op thread: on a shared 2-core box two threads wait on each other
for every small op (~7 ms each), which makes these files several times slower."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
