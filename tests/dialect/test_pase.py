"""The pase dialect's attributes from Python: construction, accessors, verifiers."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.utils.exceptions import VerifyException

from pase.dialect.pase import ConfigAttr, StrategyAttr, float_text


def raw_config(dims: list[str], factors: list[int]) -> ConfigAttr:
    """A ConfigAttr built around its normalizing __init__, as a generic parser would."""
    return ConfigAttr.new((ArrayAttr(StringAttr(d) for d in dims),
                           ArrayAttr(IntAttr(f) for f in factors)))


def test_config_omits_factors_of_one():
    config = ConfigAttr({"b": 4, "d": 1, "h": 2})
    assert config.splits == {"b": 4, "h": 2}
    assert config.num_devices == 8
    assert config.factor("d") == 1
    assert config.factor("h") == 2
    assert ConfigAttr([("b", 1)]) == ConfigAttr({})
    assert ConfigAttr({}).num_devices == 1
    assert str(ConfigAttr({"b": 4, "h": 2})) == "#pase.config<b = 4, h = 2>"
    assert str(ConfigAttr({})) == "#pase.config<>"


@pytest.mark.parametrize(("dims", "factors", "message"), [
    (["b", "h"], [2], "#pase.config needs one factor per dimension"),
    (["b", "b"], [2, 2], r"#pase.config splits a dimension twice: \['b', 'b'\]"),
    (["b"], [1], r"split factor of 'b' must be at least 2 \(factors of 1 are omitted\), got 1"),
    (["h"], [0], "split factor of 'h' must be at least 2"),
])
def test_config_verifier(dims: list[str], factors: list[int], message: str):
    with pytest.raises(VerifyException, match=message):
        raw_config(dims, factors)


def test_strategy():
    strategy = StrategyAttr(8, "pase-default", 0.5, 0.25, 0.125, 0.125, 1.5)
    assert strategy.speedup == 3.0
    assert str(strategy) == (
        '#pase.strategy<devices = 8, machine = "pase-default", total = 0.5, compute = 0.25, '
        "communication = 0.125, redistribution = 0.125, data_parallel = 1.5, speedup = 3.0000>")
    assert StrategyAttr(1, "m", 0.0, 0.0, 0.0, 0.0, 2.0).speedup == 1.0


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0.0"), (1.0, "1.0"), (0.015, "0.015"), (1e-05, "1.0e-05"), (2.5e-07, "2.5e-07"),
    (1e16, "1.0e+16"), (1250.0, "1250.0"),
])
def test_float_text(value: float, text: str):
    assert float_text(value) == text
    assert float(text) == value
