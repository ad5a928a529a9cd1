"""The pase dialect's attributes from Python: construction, accessors, verifiers."""

from __future__ import annotations

import pytest
from xdsl.dialects import test
from xdsl.dialects.builtin import ArrayAttr, IntAttr, NoneAttr, StringAttr
from xdsl.utils.exceptions import VerifyException

from pase.dialect.pase import (
    ConfigAttr,
    LayoutAttr,
    StrategyAttr,
    float_text,
    forward_layer,
    grid_order,
    layout_of,
    strategy_of,
)


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


def test_layout_of_an_operand_and_of_the_result():
    operand, result = LayoutAttr("z", 1), LayoutAttr("h")
    assert (operand.layer_name, operand.operand_index) == ("z", 1)
    assert (result.layer_name, result.operand_index) == ("h", None)
    assert str(operand) == '#pase.layout<"z", operand 1>'
    assert str(result) == '#pase.layout<"h">'
    assert LayoutAttr("z", 0) == LayoutAttr.new((StringAttr("z"), IntAttr(0)))
    assert result == LayoutAttr.new((StringAttr("h"), NoneAttr()))


def test_accessors_read_typed_values_and_none_when_absent():
    strategy = StrategyAttr(8, "m", 1.0, 0.5, 0.25, 0.25, 2.0)
    op = test.TestOp.create(attributes={
        "pase.strategy": strategy, "pase.layer": StringAttr("h"),
        "pase.grid_order": ArrayAttr([StringAttr("b"), StringAttr("h")]),
        "pase.layout_of": LayoutAttr("z", 1)})
    assert strategy_of(op) is strategy
    assert forward_layer(op) == "h"
    assert grid_order(op) == ("b", "h")
    assert layout_of(op) == LayoutAttr("z", 1)
    bare = test.TestOp.create()
    assert (strategy_of(bare), forward_layer(bare), grid_order(bare), layout_of(bare)) == (
        None, None, None, None)
