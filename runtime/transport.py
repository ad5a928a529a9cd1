"""How the communicator's messages travel between devices, and the shared state behind its
failure reports.

Backends. `threads` (the default): devices are threads of one process, and a message is a copy
of the array put in the receiver's inbox. `processes`: devices are `multiprocessing` processes
(start method 'spawn' by default, or 'fork'/'forkserver'); payloads travel through pipes, one
pipe into each device with a lock so that senders never interleave, and a drainer thread in
each device that empties its pipe into its inbox, so a sender never blocks on a receiver that
is itself sending; the abort flag, the first failure and the arrival board live in
`multiprocessing` shared memory. Inboxes match messages by (source, key) as MPI matches
(source, tag).

`Board` records which collectives each device has entered, so that a timeout can name the
devices that never arrived; `Failure` holds the rank of the first device to fail.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

# How often a waiting device looks at the abort flag and its deadline.
POLL_SECONDS = 0.02
# Distinct groups per device the board can tell apart; past that, timeouts blame the device
# a member was waiting on directly.
GROUP_SLOTS = 128

Group = tuple[int, ...]


class Board:
    """Which collectives each device has entered: the evidence behind "waiting for device 3".

    Row r is written only by device r: its state, how many group slots it uses, then pairs of
    (group key, collectives entered on that group).
    """

    RUNNING, RETURNED, FAILED = 0, 1, 2

    def __init__(self, buffer: Any, size: int, rank: int) -> None:
        self.table = np.frombuffer(buffer, dtype=np.int64).reshape(size, 2 + 2 * GROUP_SLOTS)
        self.rank = rank
        self.slots: dict[Group, int] = {}

    @staticmethod
    def words(size: int) -> int:
        return size * (2 + 2 * GROUP_SLOTS)

    @staticmethod
    def key(group: Group) -> int:
        # Hashes of int tuples do not depend on PYTHONHASHSEED, so processes agree; 0 = empty.
        return (hash(group) & 0x3FFF_FFFF_FFFF_FFFF) + 1

    def enter(self, group: Group, count: int) -> None:
        slot = self.slots.get(group)
        if slot is None:
            used = int(self.table[self.rank, 1])
            if used == GROUP_SLOTS:
                return
            slot = self.slots[group] = used
            self.table[self.rank, 2 + 2 * slot] = self.key(group)
            self.table[self.rank, 1] = used + 1
        self.table[self.rank, 3 + 2 * slot] = count

    def entered(self, rank: int, group: Group) -> int | None:
        """How many collectives `rank` entered on `group`; None if its board overflowed."""
        used = int(self.table[rank, 1])
        keys = self.table[rank, 2:2 + 2 * used:2]
        found = np.flatnonzero(keys == self.key(group))
        if found.size:
            return int(self.table[rank, 3 + 2 * found[0]])
        return None if used == GROUP_SLOTS else 0

    def set_state(self, state: int) -> None:
        self.table[self.rank, 0] = state

    def state(self, rank: int) -> int:
        return int(self.table[rank, 0])


class Inbox:
    """Messages delivered to one device, matched by (source, key); FIFO per match."""

    def __init__(self) -> None:
        self.ready = threading.Condition()
        self.messages: dict[tuple[int, Any], deque[tuple[Any, np.ndarray]]] = {}
        self.broken: BaseException | None = None

    def deposit(self, source: int, key: Any, header: Any, payload: np.ndarray) -> None:
        with self.ready:
            self.messages.setdefault((source, key), deque()).append((header, payload))
            self.ready.notify_all()

    def pop(self, source: int, key: Any, seconds: float) -> tuple[Any, np.ndarray] | None:
        """The first message from `source` under `key`, waiting at most `seconds` for it."""
        with self.ready:
            if (source, key) not in self.messages and self.broken is None and seconds > 0:
                self.ready.wait(seconds)
            if self.broken is not None:
                raise self.broken
            queue = self.messages.get((source, key))
            if not queue:
                return None
            message = queue.popleft()
            if not queue:
                del self.messages[(source, key)]
            return message


class ThreadLinks:
    """Threads share the inboxes: posting copies the array into the receiver's inbox."""

    def __init__(self, rank: int, inboxes: list[Inbox]) -> None:
        self.rank, self.inboxes, self.inbox = rank, inboxes, inboxes[rank]

    def post(self, dest: int, key: Any, header: Any, payload: np.ndarray,
             give_up: Callable[[], None]) -> None:
        self.inboxes[dest].deposit(self.rank, key, header, np.array(payload, copy=True))

    def close(self) -> None:
        pass


class PipeLinks:
    """A process's links: a pipe into every device (writers take its lock) and its own pipe,
    emptied into its inbox by a drainer thread for as long as the process lives."""

    def __init__(self, rank: int, reader: Any, writers: list[Any], locks: list[Any]) -> None:
        self.rank, self.writers, self.locks = rank, writers, locks
        self.inbox = Inbox()
        self.drainer = threading.Thread(target=self._drain, args=(reader,),
                                        name=f"pase-drain-{rank}", daemon=True)
        self.drainer.start()

    def _drain(self, reader: Any) -> None:
        while True:
            try:
                source, key, header, payload = reader.recv()
            except (EOFError, OSError):
                return
            except BaseException as error:  # an unreadable message: fail the next receive
                with self.inbox.ready:
                    self.inbox.broken = error
                    self.inbox.ready.notify_all()
                return
            self.inbox.deposit(source, key, header, payload)

    def post(self, dest: int, key: Any, header: Any, payload: np.ndarray,
             give_up: Callable[[], None]) -> None:
        lock = self.locks[dest]
        while not lock.acquire(timeout=POLL_SECONDS):
            give_up()
        try:
            self.writers[dest].send((self.rank, key, header, np.ascontiguousarray(payload)))
        except (BrokenPipeError, ConnectionResetError) as error:
            # The receiver's process is gone. Its own failure, or the launcher noticing its
            # death, is the real news: give it a moment to abort this run before reporting.
            settle = time.monotonic() + 10 * POLL_SECONDS
            while time.monotonic() < settle:
                give_up()
                time.sleep(POLL_SECONDS)
            raise ConnectionError(f"device {dest} has exited: its pipe is closed") from error
        finally:
            lock.release()

    def close(self) -> None:
        for writer in self.writers:
            writer.close()


class Failure:
    """The rank of the first device to fail, in a `Value` of `context` (multiprocessing's
    shared memory, which threads may share too)."""

    def __init__(self, context: Any) -> None:
        self.value = context.Value("i", -1)

    def claim(self, rank: int) -> bool:
        with self.value.get_lock():
            if self.value.value < 0:
                self.value.value = rank
            return bool(self.value.value == rank)

    def first(self) -> int | None:
        rank = int(self.value.value)
        return None if rank < 0 else rank
