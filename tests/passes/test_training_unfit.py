"""`training.unfit_plan`'s "every plan needs at least X GiB" is a lower bound, so X is
rounded down (as `gib_down` does), never up past what every plan needs, while it still
reads above the device's memory."""

from __future__ import annotations

import re

import pytest

from pase.passes.strategy import GIB, preset
from pase.passes.training import unfit_plan


@pytest.mark.parametrize("least", [64.0078 * GIB, 45.00006 * GIB, 40.000013 * GIB,
                                   41.99996 * GIB, 1234.5678 * GIB])
def test_the_least_memory_shown_is_a_lower_bound_above_the_device(least: float) -> None:
    machine = preset("a100-nvlink")
    message = unfit_plan(machine, least + GIB, "", lambda: least)
    assert message is not None
    shown = float(re.search(r"needs at least (\S+) GiB", message).group(1))
    assert shown * GIB <= least
    assert shown * GIB > machine.memory_gib * GIB
    assert message.endswith(f"more than its {machine.memory_gib:g} GiB")


def test_a_whole_number_of_gib_and_a_little_reads_as_the_whole_number() -> None:
    message = unfit_plan(preset("a100-nvlink"), 70 * GIB, "", lambda: 64.0078 * GIB)
    assert message is not None
    assert "needs at least 64 GiB per device" in message
