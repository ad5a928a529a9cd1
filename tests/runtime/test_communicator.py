"""The collectives against numpy, their word counts against the documented rules, determinism.

One worker function runs every collective, in f32 and f64, on every partition of a world of 8
devices into groups (sizes 1, 2, 3, 4, 8, interleaved and out of order, several groups at
once), so each backend costs one run. Inputs are random but derived from (rank, name), so the tests
rebuild every device's input to compute the references.
"""

from __future__ import annotations

import itertools
import zlib
from functools import cache
from typing import Any

import numpy as np
import pytest

from pase.runtime.communicator import CollectiveMismatch, Communicator, DeviceComm
from pase.runtime.workers import WorkerResults, run_workers

WORLD = 8
PARTITIONS = (
    ((0, 1, 2, 3, 4, 5, 6, 7),),
    ((0, 1, 2, 3), (4, 5, 6, 7)),
    ((0, 2), (1, 3), (4, 6), (5, 7)),
    ((0, 3, 6), (1, 4, 7), (2, 5)),
    ((6, 1, 4), (0, 7), (2,), (3, 5)),
    tuple((rank,) for rank in range(WORLD)),
)
DTYPES = ("float32", "float64")
# Input shape per collective; only "even" has a size every group size divides.
SHAPES = {
    "sum": (5, 7),
    "max": (5, 7),
    "even": (24,),
    "reduce_scatter": (4, 11),
    "all_gather": (3, 2),
    "all_to_all": (9, 5),
}


def source(rank: int, name: str, dtype: str) -> np.ndarray:
    """Device `rank`'s input for the collective `name`."""
    generator = np.random.default_rng([rank, zlib.crc32(name.encode())])
    return generator.standard_normal(SHAPES[name]).astype(dtype)


def group_of(rank: int, partition: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    return next(group for group in partition if rank in group)


def collectives(comm: DeviceComm, group: tuple[int, ...], dtype: str,
                tag: str) -> dict[str, np.ndarray]:
    """Each collective once on `group`, with this device's inputs, tagged "<tag>/<name>"."""
    inputs = {name: source(comm.rank, name, dtype) for name in SHAPES}
    return {
        "sum": comm.all_reduce(inputs["sum"], group, "sum", f"{tag}/sum"),
        "max": comm.all_reduce(inputs["max"], group, op="max", tag=f"{tag}/max"),
        "even": comm.all_reduce(inputs["even"], group, tag=f"{tag}/even"),
        "reduce_scatter": comm.reduce_scatter(inputs["reduce_scatter"], group, axis=1,
                                              tag=f"{tag}/reduce_scatter"),
        "all_gather": comm.all_gather(inputs["all_gather"], group, axis=1,
                                      tag=f"{tag}/all_gather"),
        "all_to_all": comm.all_to_all(inputs["all_to_all"], group, split_axis=0,
                                      concat_axis=1, tag=f"{tag}/all_to_all"),
    }


def every_collective(comm: DeviceComm) -> dict[tuple[str, int], dict[str, np.ndarray]]:
    """Run on every device: the collectives on its group of every partition, in each dtype,
    tagged "<dtype>/<partition>/<collective>"."""
    return {(dtype, index): collectives(comm, group_of(comm.rank, partition), dtype,
                                        f"{dtype}/{index}")
            for dtype in DTYPES for index, partition in enumerate(PARTITIONS)}


@cache
def suite(backend: str) -> WorkerResults:
    return run_workers(every_collective, WORLD, backend=backend)


def ring_fold(arrays: list[np.ndarray], combine: Any) -> np.ndarray:
    """The documented order: chunk c folded left to right from the member after its owner."""
    count, flats = len(arrays), [array.reshape(-1) for array in arrays]
    folded = np.empty_like(flats[0])
    for owner, chunk in enumerate(np.array_split(np.arange(flats[0].size), count)):
        total = flats[(owner + 1) % count][chunk]
        for step in range(2, count + 1):
            total = combine(total, flats[(owner + step) % count][chunk])
        folded[chunk] = total
    return folded.reshape(arrays[0].shape)


def references(group: tuple[int, ...], dtype: str) -> dict[str, list[np.ndarray]]:
    """What each position of the group should get, from numpy."""
    inputs = {name: [source(rank, name, dtype) for rank in group] for name in SHAPES}
    count = len(group)
    reduced = np.sum(inputs["reduce_scatter"], axis=0)
    gathered = np.concatenate(inputs["all_gather"], axis=1)
    return {
        "sum": [ring_fold(inputs["sum"], np.add)] * count,
        "max": [np.max(inputs["max"], axis=0)] * count,
        "even": [ring_fold(inputs["even"], np.add)] * count,
        "reduce_scatter": np.array_split(reduced, count, axis=1),
        "all_gather": [gathered] * count,
        "all_to_all": [np.concatenate([np.array_split(block, count, axis=0)[position]
                                       for block in inputs["all_to_all"]], axis=1)
                       for position in range(count)],
    }


def expected_words(name: str, count: int, position: int) -> tuple[int, int]:
    """(sent, received) by the rules of communicator.py's docstring, from array_split sizes."""
    size = int(np.prod(SHAPES[name]))
    if count == 1:
        return 0, 0
    before, after = (position - 1) % count, (position + 1) % count
    if name in ("sum", "max", "even"):
        chunks = [len(chunk) for chunk in np.array_split(np.arange(size), count)]
        return (2 * size - chunks[position] - chunks[after],
                2 * size - chunks[before] - chunks[position])
    if name == "all_gather":
        return (count - 1) * size, (count - 1) * size
    axis = 1 if name == "reduce_scatter" else 0
    row = size // SHAPES[name][axis]
    blocks = [len(block) * row for block in np.array_split(np.arange(SHAPES[name][axis]), count)]
    if name == "reduce_scatter":
        return size - blocks[position], size - blocks[before]
    return size - blocks[position], (count - 1) * blocks[position]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_collectives_match_numpy(backend: str, dtype: str) -> None:
    results = suite(backend)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for index, partition in enumerate(PARTITIONS):
        for group in partition:
            expected = references(group, dtype)
            for position, rank in enumerate(group):
                for name, want in expected.items():
                    got = results[rank][dtype, index][name]
                    where = f"{name} on device {rank} of group {group}"
                    assert got.dtype == np.dtype(dtype), where
                    assert got.shape == want[position].shape, where
                    if name in ("sum", "even", "max", "all_gather", "all_to_all"):
                        np.testing.assert_array_equal(got, want[position], err_msg=where)
                    else:
                        np.testing.assert_allclose(got, want[position], rtol=tolerance,
                                                   atol=tolerance, err_msg=where)


def test_all_reduce_is_close_to_the_plain_sum() -> None:
    results = suite("threads")
    group = PARTITIONS[0][0]
    plain = np.sum([source(rank, "sum", "float64") for rank in group], axis=0)
    np.testing.assert_allclose(results[5]["float64", 0]["sum"], plain, rtol=1e-12)


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_word_counts_follow_the_documented_rules(backend: str) -> None:
    """Exact counts per device; an all-reduce's group sends 2(g-1)·W words in total, which is
    2(g-1)/g · W on each device when g divides W ("even")."""
    counters = suite(backend).counters()
    for dtype, (index, partition) in itertools.product(DTYPES, enumerate(PARTITIONS)):
        for group in partition:
            for name in SHAPES:
                tag = f"{dtype}/{index}/{name}"
                # A group of one moves nothing and counts nothing, not even zeros.
                assert len(group) > 1 or tag not in counters[group[0]]
                counted = [counters[rank].get(tag, {"sent": 0, "received": 0}) for rank in group]
                for position, rank in enumerate(group):
                    sent, received = expected_words(name, len(group), position)
                    assert (counted[position]["sent"], counted[position]["received"]) == (
                        sent, received), f"{name} on device {rank} of group {group}"
                if name in ("sum", "even"):
                    total = 2 * (len(group) - 1) * int(np.prod(SHAPES[name]))
                    assert sum(c["sent"] for c in counted) == total
                    if name == "even":
                        assert all(c["sent"] * len(group) == total for c in counted)


def test_counters_by_op() -> None:
    results = suite("threads")
    by_tag, by_op = results.counters(), results.counters(by="op")
    for rank in range(WORLD):
        assert set(by_op[rank]) == {"all_reduce", "reduce_scatter", "all_gather", "all_to_all"}
        for kind in ("sent", "received"):
            assert (sum(entry[kind] for entry in by_op[rank].values())
                    == sum(entry[kind] for entry in by_tag[rank].values()))
    with pytest.raises(ValueError, match="by 'tag' or 'op'"):
        results.counters(by="group")


def test_results_are_bit_identical_across_runs_and_backends() -> None:
    again = run_workers(every_collective, WORLD)
    for first in (suite("threads"), suite("processes")):
        for rank in range(WORLD):
            for key, arrays in again[rank].items():
                for name, array in arrays.items():
                    assert array.tobytes() == first[rank][key][name].tobytes(), (rank, key, name)


def point_to_point(comm: DeviceComm) -> list[np.ndarray]:
    """Device 0 sends three messages to device 1: two under one tag (kept in order), one
    under another (received first); every shape and dtype survives."""
    if comm.rank == 0:
        comm.send(np.arange(6, dtype=np.int32).reshape(2, 3), 1, "a")
        comm.send(np.ones((4,), dtype=np.float64), 1, "a")
        comm.send(np.full((1, 1, 2), 7, dtype=np.float32), 1, "b")
        return []
    return [comm.recv(0, "b"), comm.recv(0, "a"), comm.recv(0, "a")]


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_send_and_recv(backend: str) -> None:
    results = run_workers(point_to_point, 2, backend=backend)
    late, first, second = results[1]
    np.testing.assert_array_equal(late, np.full((1, 1, 2), 7, dtype=np.float32))
    np.testing.assert_array_equal(first, np.arange(6, dtype=np.int32).reshape(2, 3))
    np.testing.assert_array_equal(second, np.ones(4))
    assert (late.dtype, first.dtype, second.dtype) == (np.float32, np.int32, np.float64)
    assert results.counters() == {0: {"a": {"sent": 10, "received": 0},
                                      "b": {"sent": 2, "received": 0}},
                                  1: {"a": {"sent": 0, "received": 10},
                                      "b": {"sent": 0, "received": 2}}}
    assert results.counters(by="op")[1] == {"recv": {"sent": 0, "received": 12}}


def mismatched_ops(comm: DeviceComm) -> np.ndarray:
    array = np.zeros((2, 3), dtype=np.float32)
    if comm.rank == 0:
        return comm.all_reduce(array, (0, 1), tag="x")
    return comm.all_gather(array, (0, 1), axis=0, tag="x")


def mismatched_blocks(comm: DeviceComm) -> np.ndarray:
    return comm.all_gather(np.zeros((2 + comm.rank, 3)), (0, 1), axis=0, tag="blocks")


@pytest.mark.parametrize(("fn", "message"), [
    (mismatched_ops, r"device \d called all_\w+ 'x' with float32\[2, 3\] as collective #0"),
    (mismatched_blocks, r"all_gather 'blocks' on group \(0, 1\): .*float64\[\d, 3\]"),
])
def test_mismatched_collectives_are_reported(fn: Any, message: str) -> None:
    with pytest.raises(CollectiveMismatch, match=message):
        run_workers(fn, 2, timeout=10.0)


def call(method: str, **arguments: Any) -> Any:
    def worker(comm: DeviceComm) -> Any:
        return getattr(comm, method)(np.zeros(4), **arguments)

    return worker


@pytest.mark.parametrize(("method", "arguments", "error", "message"), [
    ("all_reduce", {"group": (0, 2)}, ValueError, r"device 1 called all_reduce '' on group"),
    ("all_reduce", {"group": (0, 0, 1)}, ValueError, "distinct device ids"),
    ("all_reduce", {"group": (0, 1, 5)}, ValueError, r"outside 0\.\.2"),
    ("all_reduce", {"group": (0, 1, 2), "op": "mean"}, ValueError, "op must be one of"),
    ("all_gather", {"group": (0, 1, 2), "axis": 1}, ValueError, "axis 1 is out of range"),
    ("all_reduce", {"group": (0, 1, 2), "tag": 3}, TypeError, "tag must be a string"),
    ("send", {"dest": 1}, ValueError, "device 1 cannot send '' to or from itself"),
])
def test_invalid_calls_are_sentences(method: str, arguments: dict[str, Any], error: type,
                                     message: str) -> None:
    with pytest.raises(error, match=message):
        run_workers(call(method, **arguments), 3, timeout=10.0)


def test_communicator_options_are_checked() -> None:
    with pytest.raises(ValueError, match="at least one device"):
        Communicator(0)
    with pytest.raises(ValueError, match="backend must be one of threads, processes"):
        Communicator(2, backend="mpi")
    with pytest.raises(ValueError, match="positive number of seconds"):
        Communicator(2, timeout=0)
    with pytest.raises(ValueError, match="start method 'teleport'"):
        Communicator(2, backend="processes", start_method="teleport")
