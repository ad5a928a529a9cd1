"""The MPI-free communicator: ring collectives among p workers over shared memory.

Each worker holds a `DeviceComm` (its `rank`, the world `size`) and calls collectives over an
explicit, ordered group of device ids; every member calls with the same group, op, shape, dtype
and tag. Names follow MLIR's `mesh` dialect (`all_reduce`, `all_gather`, `reduce_scatter`,
`all_to_all`):

    total = comm.all_reduce(grad, (0, 1, 2, 3), op="sum", tag="fc6/grad")
    rows = comm.all_gather(block, (0, 2), axis=0, tag="fc7/x")

Backends: `threads` (the default) and `processes`; `pase.runtime.transport` carries the
messages.

Algorithms (position i = index of the device in the group, g = group size, chunks and blocks
split as `numpy.array_split` does: the first `n mod g` are one element or row longer):

- `all_reduce` is a ring: a reduce-scatter of g-1 steps after which position i holds the
  reduced chunk i of the flattened array, then an all-gather of g-1 steps. Deterministic: chunk
  c is folded left to right along the ring, starting at the member after its owner,
  `((x[c+1] + x[c+2]) + ...) + x[c]` (positions mod g), whatever the timing, so equal inputs
  give bit-identical results on every device, every run and both backends.
- `reduce_scatter` is the first half: position i gets block i along `axis`.
- `all_gather` is a ring of g-1 steps; blocks (equal shapes) are concatenated in group order.
- `all_to_all` sends block j of `split_axis` to position j and concatenates what it receives
  along `concat_axis` in group order.

Words (elements) each device sends, W its input's size; received words mirror them:

- all_reduce: `2W - |c_i| - |c_(i+1)|` sent, `2W - |c_(i-1)| - |c_i|` received, which is
  `2(g-1)/g · W` when g divides W; the group's total is `2(g-1) · W` in every case.
- reduce_scatter: `W - |b_i|` sent, `W - |b_(i-1)|` received (`(g-1)/g · W` if g divides).
- all_gather: `(g-1) · W` sent and received (W is the block).
- all_to_all: `W - |b_i|` sent, `(g-1) · |b_i|` received.
- send / recv: the array's size, counted as op `send` by the sender and `recv` by the receiver.
- A group of one device is a no-op that moves and counts nothing.

Each device counts per (tag, op kind); `Communicator.counters()` (and `run_workers(...)
.counters()`) give {rank: {tag: {"sent": n, "received": n}}}, or per op kind with `by="op"`.

Failures. A wait longer than `timeout` seconds since the collective began raises
`CollectiveTimeout` naming the devices that never entered it (from a board of shared counters
each device updates on entry); a failing device sets an abort flag that every waiting device
checks, so they stop with `WorkerAborted`; members disagreeing on the op, tag, shape or dtype
of a collective raise `CollectiveMismatch` (checked on every message: cheap, since each
carries its sender's op, tag, shape and dtype, and the collective's sequence number on the
group is part of its key).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import numpy as np

from pase.core.signals import start_resource_tracker
from pase.runtime.transport import (
    POLL_SECONDS,
    Board,
    Failure,
    Group,
    Inbox,
    PipeLinks,
    ThreadLinks,
)

BACKENDS = ("threads", "processes")
REDUCTIONS: dict[str, Callable[..., Any]] = {"sum": np.add, "max": np.maximum}
Words = dict[tuple[str, str], list[int]]


class CollectiveTimeout(TimeoutError):
    """A collective waited longer than the communicator's timeout.

    `missing` holds the devices that never entered it, or the device waited on directly.
    """

    def __init__(self, message: str, *, op: str = "", tag: str = "", group: Group = (),
                 missing: Group = ()) -> None:
        super().__init__(message)
        self.op, self.tag, self.group, self.missing = op, tag, group, missing


class CollectiveMismatch(RuntimeError):
    """Members of a group called different collectives (op, tag, shape or dtype) at one step."""


class WorkerAborted(RuntimeError):
    """This device stopped waiting because another device failed."""


def chunk_bounds(length: int, parts: int) -> list[int]:
    """Offsets of `parts` chunks of `length` as `numpy.array_split` cuts them.

    >>> chunk_bounds(10, 4)
    [0, 3, 6, 8, 10]
    """
    base, extra = divmod(length, parts)
    return [0, *accumulate(base + (index < extra) for index in range(parts))]


def _describe(dtype: str, shape: tuple[int, ...]) -> str:
    return f"{np.dtype(dtype).name}[{', '.join(map(str, shape))}]"


def _devices(ranks: Sequence[int]) -> str:
    names = ", ".join(str(rank) for rank in ranks)
    return f"device {names}" if len(ranks) == 1 else f"devices {names}"


@dataclass
class Endpoint:
    """What one device needs to join the communicator; picklable for 'spawn' processes."""

    rank: int
    size: int
    timeout: float
    abort: Any
    failure: Any
    board: Any
    inboxes: list[Inbox] | None = None
    reader: Any = None
    writers: list[Any] = field(default_factory=list)
    locks: list[Any] = field(default_factory=list)
    # Under 'fork' a child inherits every device's pipe; it closes the others' so that a
    # sender to a device that has exited gets a broken pipe instead of blocking.
    inherited_readers: list[Any] = field(default_factory=list)

    def connect(self) -> DeviceComm:
        for reader in self.inherited_readers:
            reader.close()
        links: ThreadLinks | PipeLinks
        if self.inboxes is not None:
            links = ThreadLinks(self.rank, self.inboxes)
        else:
            links = PipeLinks(self.rank, self.reader, self.writers, self.locks)
        return DeviceComm(self, links)


@dataclass
class _Call:
    """One collective in flight on one device."""

    op: str
    tag: str
    group: Group
    seq: int
    position: int
    signature: tuple[str, tuple[int, ...]]
    until: float

    def header(self) -> tuple[str, str, str, tuple[int, ...]]:
        return (self.op, self.tag, *self.signature)


class DeviceComm:
    """One device's view of the communicator: its rank, the world size and the collectives."""

    def __init__(self, endpoint: Endpoint, links: ThreadLinks | PipeLinks) -> None:
        self.rank, self.size, self.timeout = endpoint.rank, endpoint.size, endpoint.timeout
        self._abort, self._failure = endpoint.abort, endpoint.failure
        self._board = Board(endpoint.board, endpoint.size, endpoint.rank)
        self._links = links
        self._seq: dict[Group, int] = {}
        self.words: Words = {}

    def __repr__(self) -> str:
        return f"DeviceComm(rank={self.rank}, size={self.size})"

    # Collectives ----------------------------------------------------------------------------

    def all_reduce(self, array: Any, group: Sequence[int], op: str = "sum",
                   tag: str = "") -> np.ndarray:
        """The elementwise sum (or max) of every member's array, on every member (ring)."""
        combine = self._reduction(op, "all_reduce")
        array, _, call = self._begin("all_reduce", group, tag, array)
        if call is None:
            return array.copy()
        flat = np.array(array, order="C", copy=True).reshape(-1)
        bounds = chunk_bounds(flat.size, len(call.group))
        self._ring_reduce_scatter(call, flat, bounds, combine)
        self._ring_all_gather(call, flat, bounds, first_step=len(call.group) - 1)
        return flat.reshape(array.shape)

    def reduce_scatter(self, array: Any, group: Sequence[int], axis: int = 0, op: str = "sum",
                       tag: str = "") -> np.ndarray:
        """Block `position` along `axis` of the elementwise sum (or max) of the arrays."""
        combine = self._reduction(op, "reduce_scatter")
        array, (axis,), call = self._begin("reduce_scatter", group, tag, array, axis)
        if call is None:
            return array.copy()
        moved = np.moveaxis(array, axis, 0)
        row = int(np.prod(moved.shape[1:], dtype=np.int64))
        rows = chunk_bounds(moved.shape[0], len(call.group))
        flat = np.array(moved, order="C", copy=True).reshape(-1)
        self._ring_reduce_scatter(call, flat, [bound * row for bound in rows], combine)
        mine = rows[call.position], rows[call.position + 1]
        block = flat[mine[0] * row:mine[1] * row].reshape((mine[1] - mine[0], *moved.shape[1:]))
        return np.ascontiguousarray(np.moveaxis(block, 0, axis))

    def all_gather(self, array: Any, group: Sequence[int], axis: int = 0,
                   tag: str = "") -> np.ndarray:
        """Every member's block concatenated along `axis` in group order (ring)."""
        array, (axis,), call = self._begin("all_gather", group, tag, array, axis)
        if call is None:
            return array.copy()
        count = len(call.group)
        flat = np.empty(count * array.size, dtype=array.dtype)
        flat[call.position * array.size:(call.position + 1) * array.size] = array.reshape(-1)
        self._ring_all_gather(call, flat, [index * array.size for index in range(count + 1)])
        return np.concatenate(list(flat.reshape(count, *array.shape)), axis=axis)

    def all_to_all(self, array: Any, group: Sequence[int], split_axis: int, concat_axis: int,
                   tag: str = "") -> np.ndarray:
        """Block j along `split_axis` goes to position j; received blocks are concatenated
        along `concat_axis` in group order."""
        array, (split_axis, concat_axis), call = self._begin("all_to_all", group, tag, array,
                                                             split_axis, concat_axis)
        if call is None:
            return array.copy()
        count, position = len(call.group), call.position
        blocks = np.array_split(array, count, axis=split_axis)
        # Step s goes to the member s+1 places on, as the rings' step 0 does, so that an
        # all_to_all meeting a ring collective is reported as a mismatch.
        for step in range(count - 1):
            target = (position + step + 1) % count
            self._post(call, call.group[target], step, blocks[target])
        received = list(blocks)
        for step in range(count - 1):
            source = (position - step - 1) % count
            received[source] = self._take(call, call.group[source], step)
        return np.concatenate(received, axis=concat_axis)

    def send(self, array: Any, dest: int, tag: str = "") -> None:
        """Send `array` (its shape and dtype travel with it) to device `dest`, without waiting
        for the matching `recv`."""
        array = np.asarray(array)
        self._check_peer(dest, "send", tag)
        until = time.monotonic() + self.timeout
        self._links.post(dest, ("p2p", tag), ("send", tag, array.dtype.str, array.shape), array,
                         lambda: self._give_up("send", tag, f"to device {dest}", (dest,), until))
        self._count(tag, "send", sent=array.size)

    def recv(self, source: int, tag: str = "") -> np.ndarray:
        """The next array device `source` sent with `tag`."""
        self._check_peer(source, "recv", tag)
        until = time.monotonic() + self.timeout
        _, payload = self._wait(source, ("p2p", tag), lambda: self._give_up(
            "recv", tag, f"from device {source}", (source,), until))
        self._count(tag, "recv", received=payload.size)
        return payload

    # Lifecycle, used by the launcher ---------------------------------------------------------

    def finish(self) -> None:
        """Mark this device as returned from its function."""
        self._board.set_state(Board.RETURNED)

    def fail(self) -> bool:
        """Mark this device failed and stop every other device; True if it failed first."""
        first = self._failure.claim(self.rank)
        self._board.set_state(Board.FAILED)
        self._abort.set()
        return bool(first)

    def close(self) -> None:
        self._links.close()

    # Rings -------------------------------------------------------------------------------------

    def _ring_reduce_scatter(self, call: _Call, flat: np.ndarray, bounds: list[int],
                             combine: Callable[..., Any]) -> None:
        """g-1 steps; at step s position i sends chunk i-s-1 on and folds chunk i-s-2 into its
        own copy, so that it ends holding the reduced chunk i."""
        count, position = len(call.group), call.position
        after, before = call.group[(position + 1) % count], call.group[(position - 1) % count]
        for step in range(count - 1):
            out, into = (position - step - 1) % count, (position - step - 2) % count
            self._post(call, after, step, flat[bounds[out]:bounds[out + 1]])
            chunk = flat[bounds[into]:bounds[into + 1]]
            combine(self._take(call, before, step), chunk, out=chunk)

    def _ring_all_gather(self, call: _Call, flat: np.ndarray, bounds: list[int],
                         first_step: int = 0) -> None:
        """g-1 steps from position i holding chunk i; at step s it sends chunk i-s on and
        stores chunk i-s-1."""
        count, position = len(call.group), call.position
        after, before = call.group[(position + 1) % count], call.group[(position - 1) % count]
        for step in range(count - 1):
            out, into = (position - step) % count, (position - step - 1) % count
            self._post(call, after, first_step + step, flat[bounds[out]:bounds[out + 1]])
            flat[bounds[into]:bounds[into + 1]] = self._take(call, before, first_step + step)

    # Plumbing ----------------------------------------------------------------------------------

    def _begin(self, op: str, group: Sequence[int], tag: str, array: Any,
               *axes: int) -> tuple[np.ndarray, list[int], _Call | None]:
        """The array and its axes (checked, made non-negative) and the collective in flight;
        None for a group of one, which moves nothing."""
        array = np.asarray(array)
        axes_in_range = [self._axis(array, axis, op) for axis in axes]
        members = self._check_group(op, group, tag)
        if len(members) == 1:
            return array, axes_in_range, None
        seq = self._seq.get(members, 0)
        self._seq[members] = seq + 1
        self._board.enter(members, seq + 1)
        return array, axes_in_range, _Call(op, tag, members, seq, members.index(self.rank),
                                           (array.dtype.str, array.shape),
                                           time.monotonic() + self.timeout)

    def _post(self, call: _Call, dest: int, step: int, payload: np.ndarray) -> None:
        self._links.post(dest, ("collective", call.group, call.seq, step), call.header(), payload,
                         lambda: self._give_up(call.op, call.tag, f"on group {call.group}",
                                               (dest,), call.until, call))
        self._count(call.tag, call.op, sent=payload.size)

    def _take(self, call: _Call, source: int, step: int) -> np.ndarray:
        header, payload = self._wait(
            source, ("collective", call.group, call.seq, step),
            lambda: self._give_up(call.op, call.tag, f"on group {call.group}", (source,),
                                  call.until, call))
        if header != call.header():
            op, tag, dtype, shape = header
            raise CollectiveMismatch(
                f"{call.op} '{call.tag}' on group {call.group}: device {source} called {op} "
                f"'{tag}' with {_describe(dtype, shape)} as collective #{call.seq} on this group, "
                f"but device {self.rank} called {call.op} '{call.tag}' with "
                f"{_describe(*call.signature)}; every member must call the same collective "
                "with the same shape and dtype")
        self._count(call.tag, call.op, received=payload.size)
        return payload

    def _wait(self, source: int, key: Any,
              give_up: Callable[[], None]) -> tuple[Any, np.ndarray]:
        while True:
            message = self._links.inbox.pop(source, key, POLL_SECONDS)
            if message is not None:
                return message
            give_up()

    def _give_up(self, op: str, tag: str, where: str, waited_on: Group, until: float,
                 call: _Call | None = None) -> None:
        """Raise if another device failed or the deadline passed; otherwise keep waiting."""
        if self._abort.is_set():
            first = self._failure.first()
            culprit = f"device {first} failed" if first is not None else "the run was aborted"
            raise WorkerAborted(f"device {self.rank} stopped in {op} '{tag}': {culprit}")
        if time.monotonic() < until:
            return
        missing = (self._missing(call) if call is not None else ()) or waited_on
        notes = "".join(f" (device {rank} returned from its function without joining)"
                        for rank in missing if self._board.state(rank) == Board.RETURNED)
        raise CollectiveTimeout(
            f"{op} '{tag}' {where}: timed out after {self.timeout} s waiting for "
            f"{_devices(missing)}{notes}",
            op=op, tag=tag, group=call.group if call is not None else waited_on, missing=missing)

    def _missing(self, call: _Call) -> Group:
        """Members that have not entered the collective yet, by the board."""
        return tuple(rank for rank in call.group if rank != self.rank
                     and (entered := self._board.entered(rank, call.group)) is not None
                     and entered <= call.seq)

    def _count(self, tag: str, op: str, sent: int = 0, received: int = 0) -> None:
        counts = self.words.setdefault((tag, op), [0, 0])
        counts[0] += sent
        counts[1] += received

    def _check_group(self, op: str, group: Sequence[int], tag: str) -> Group:
        if not isinstance(tag, str):
            raise TypeError(f"{op}: the tag must be a string, not {tag!r}")
        members = tuple(int(rank) for rank in group)
        if not members or len(set(members)) != len(members):
            raise ValueError(f"{op} '{tag}': group {members} must list distinct device ids")
        if any(not 0 <= rank < self.size for rank in members):
            raise ValueError(f"{op} '{tag}': group {members} names devices outside "
                             f"0..{self.size - 1}")
        if self.rank not in members:
            raise ValueError(f"device {self.rank} called {op} '{tag}' on group {members}, "
                             "which does not contain it")
        return members

    def _check_peer(self, peer: int, op: str, tag: str) -> None:
        if not 0 <= peer < self.size:
            raise ValueError(f"{op} '{tag}': device {peer} is outside 0..{self.size - 1}")
        if peer == self.rank:
            raise ValueError(f"device {self.rank} cannot {op} '{tag}' to or from itself; "
                             "keep the array local")

    @staticmethod
    def _reduction(op: str, collective: str) -> Callable[..., Any]:
        if op not in REDUCTIONS:
            raise ValueError(f"{collective}: op must be one of {sorted(REDUCTIONS)}, not {op!r}")
        return REDUCTIONS[op]

    @staticmethod
    def _axis(array: np.ndarray, axis: int, op: str) -> int:
        if not -array.ndim <= axis < array.ndim:
            raise ValueError(f"{op}: axis {axis} is out of range for an array of shape "
                             f"{array.shape}")
        return axis % array.ndim


class Communicator:
    """The wiring among `size` devices for one run: inboxes or pipes, the abort flag, the
    first failure and the arrival board. `endpoint(rank)` is what a device connects with;
    `runtime.workers.run_workers` does all of this for you.

    >>> communicator = Communicator(4, backend="threads", timeout=60.0)
    >>> communicator.endpoint(2).connect().rank
    2
    """

    def __init__(self, size: int, backend: str = "threads", timeout: float = 60.0, *,
                 start_method: str = "spawn") -> None:
        if size < 1:
            raise ValueError(f"a communicator needs at least one device, not {size}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout}")
        self.size, self.backend, self.timeout = size, backend, float(timeout)
        self.start_method = start_method
        self.words: dict[int, Words] = {}
        if backend == "threads":
            self.context: Any = None
            self.abort: Any = threading.Event()
            self.failure = Failure(multiprocessing)
            self.board: Any = bytearray(8 * Board.words(size))
            self.inboxes: list[Inbox] | None = [Inbox() for _ in range(size)]
            return
        if start_method not in multiprocessing.get_all_start_methods():
            raise ValueError(f"start method {start_method!r} is not available here; use one of "
                             f"{', '.join(multiprocessing.get_all_start_methods())}")
        start_resource_tracker()  # deaf to a hang-up, before any process or block exists
        self.context = multiprocessing.get_context(start_method)
        self.abort = self.context.Event()
        self.failure = Failure(self.context)
        self.board = self.context.RawArray("q", Board.words(size))
        self.inboxes = None
        pipes = [self.context.Pipe(duplex=False) for _ in range(size)]
        self.readers = [reader for reader, _ in pipes]
        self.writers = [writer for _, writer in pipes]
        self.locks = [self.context.Lock() for _ in range(size)]

    def endpoint(self, rank: int) -> Endpoint:
        """What device `rank` connects with (`endpoint.connect()` in its thread or process)."""
        endpoint = Endpoint(rank, self.size, self.timeout, self.abort, self.failure, self.board,
                            self.inboxes)
        if self.backend == "processes":
            endpoint.reader, endpoint.writers, endpoint.locks = (
                self.readers[rank], self.writers, self.locks)
            if self.start_method == "fork":
                endpoint.inherited_readers = [reader for other, reader in enumerate(self.readers)
                                              if other != rank]
        return endpoint

    def release(self) -> None:
        """Close this process's ends of the pipes once every device process has started."""
        if self.backend == "processes":
            for connection in (*self.readers, *self.writers):
                connection.close()

    def first_failure(self) -> int | None:
        """The rank of the first device that failed, if any."""
        first = self.failure.first()
        return None if first is None else int(first)

    def counters(self, by: str = "tag") -> dict[int, dict[str, dict[str, int]]]:
        """{rank: {tag: {"sent": n, "received": n}}} after a run (`by="op"`: per op kind)."""
        if by not in ("tag", "op"):
            raise ValueError(f"counters can be grouped by 'tag' or 'op', not {by!r}")
        table: dict[int, dict[str, dict[str, int]]] = {}
        for rank, counts in sorted(self.words.items()):
            table[rank] = {}
            for (tag, op), (sent, received) in counts.items():
                entry = table[rank].setdefault(tag if by == "tag" else op,
                                               {"sent": 0, "received": 0})
                entry["sent"] += sent
                entry["received"] += received
        return table
