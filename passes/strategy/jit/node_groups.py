"""Nodes that give the links walk the same words, found once per pair (`dim_links`' grouped
walk): two compiled loop nests over per-dim layouts, exact (whole rows compared, hashes only
to find them).

On a node n whose devices d = n·N + j (j < N, N devices per node) all work in the sender
layout a and all receive in b, the words of `jit.dim_links` are, per device, whole = |N_b|,
own = prod_k M_k(n)[j][j] and local = sum over the slots i that first hold their block
(`first[a, n·N + i]`) of prod_k M_k(n)[j][i], with M_k(n)[j][i] the overlap along dim k of
b's block on slot j and a's block on slot i. So the node's largest words are a function of
the N x N matrices M_k(n) and of which slots first hold: nodes where those are all the same
give the same maxima, and a pair's walk needs one node of each kind only.

- `dim_node_ids(coords, combos, limits, per_node)`: for each per-dim pair of layouts
  (combos[c] = (a's coordinate row, a's block length, b's row, b's length)), the first node
  whose M equals node n's, for n < limits[c], (combos, max(limits)) int64;
- `node_groups(ids, combo_of, first_key, held, counts)`: for each pair p (sender layout
  held[p], per-dim combos combo_of[p]), the first node n < counts[p] of each kind (the
  tuple of its dims' ids and the sender's first-holder mask first_key[held[p], n]), as
  p·nodes + n, increasing, int64.

Each dedupes by open addressing over a table of node numbers (0 empty, else node + 1),
comparing whole rows where the hashes meet.
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from pase.passes.strategy.jit.compiler import Loops, compiled_once

I64 = ir.IntType(64)
IDS = "pase_dim_node_ids"
GROUPS = "pase_node_groups"
_MIX = 0x9E3779B97F4A7C15 - (1 << 64)   # (as a signed int64)

_IDS_SIGNATURE = ctypes.CFUNCTYPE(None, *(ctypes.c_void_p,) * 3, *(ctypes.c_int64,) * 5,
                                  *(ctypes.c_void_p,) * 3)
_GROUPS_SIGNATURE = ctypes.CFUNCTYPE(None, *(ctypes.c_void_p,) * 5, *(ctypes.c_int64,) * 4,
                                     *(ctypes.c_void_p,) * 4)


def _load(builder: ir.IRBuilder, array: ir.Value, index: ir.Value) -> ir.Value:
    return builder.load(builder.gep(array, [index]))


def _mix(builder: ir.IRBuilder, hashed: ir.Value, value: ir.Value) -> ir.Value:
    return builder.mul(builder.xor(hashed, value), ir.Constant(I64, _MIX))


def find_or_insert(loops: Loops, table: ir.Value, mask: ir.Value, rows: ir.Value,
                   width: ir.Value, item: ir.Value, hashed: ir.Value) -> ir.Value:
    """The first item whose row (`width` int64s at rows[item·width]) equals item's, found
    in (or added to) `table` (mask + 1 slots, 0 empty, else item + 1) from slot hashed &
    mask on."""
    builder, zero, one = loops.builder, loops.zero, loops.one
    found = loops.variable(ir.Constant(I64, -1))
    hashed = builder.xor(hashed, builder.lshr(hashed, ir.Constant(I64, 29)))
    slot = loops.variable(builder.and_(hashed, mask))
    mine = builder.mul(item, width)

    def probe(_: ir.Value) -> None:
        at = builder.load(slot)
        entry = _load(builder, table, at)
        with builder.if_else(builder.icmp_signed("==", entry, zero)) as (empty, full):
            with empty:
                builder.store(builder.add(item, one), builder.gep(table, [at]))
                builder.store(item, found)
            with full:
                other = builder.sub(entry, one)
                theirs = builder.mul(other, width)
                same = loops.variable(one)
                loops.loop(zero, width, lambda w: builder.store(builder.zext(builder.icmp_signed(
                    "==", _load(builder, rows, builder.add(theirs, w)),
                    _load(builder, rows, builder.add(mine, w))), I64), same),
                    lambda: builder.icmp_signed("!=", builder.load(same), zero))
                with builder.if_then(builder.icmp_signed("!=", builder.load(same), zero)):
                    builder.store(other, found)
        builder.store(builder.and_(builder.add(at, one), mask), slot)

    loops.loop(zero, builder.add(mask, one), probe,
               lambda: builder.icmp_signed("<", builder.load(found), zero))
    return builder.load(found)


def _clear(loops: Loops, table: ir.Value, mask: ir.Value) -> None:
    loops.loop(loops.zero, loops.builder.add(mask, loops.one), lambda at: loops.builder.store(
        loops.zero, loops.builder.gep(table, [at])))


def build_ids_module() -> ir.Module:
    """`ids(coords, combos, limits, count, devices, per_node, nodes, mask, rows, table,
    out)`: the module docstring's `dim_node_ids` (rows: nodes·per_node² scratch, table
    mask + 1)."""
    module = ir.Module(name=IDS)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        pointer, pointer, pointer, I64, I64, I64, I64, I64, pointer, pointer, pointer]), IDS)
    (coords, combos, limits, count, devices, per_node, nodes, mask, rows, table,
     out) = function.args
    loops = Loops(function)
    builder, zero, loop = loops.builder, loops.zero, loops.loop
    width = builder.mul(per_node, per_node)

    def over_combos(combo: ir.Value) -> None:
        at = builder.mul(combo, ir.Constant(I64, 4))
        numbers = [_load(builder, combos, builder.add(at, ir.Constant(I64, k)))
                   for k in range(4)]
        a_row, b_row = (builder.mul(numbers[k], devices) for k in (0, 2))
        a_length, b_length = numbers[1], numbers[3]
        _clear(loops, table, mask)

        def over_nodes(node: ir.Value) -> None:
            base = builder.mul(node, per_node)
            hashed = loops.variable(zero)

            def over_receivers(j: ir.Value) -> None:
                b_lo = builder.mul(_load(builder, coords, builder.add(b_row, builder.add(
                    base, j))), b_length)
                b_hi = builder.add(b_lo, b_length)
                place = builder.add(builder.mul(node, width), builder.mul(j, per_node))

                def over_senders(i: ir.Value) -> None:
                    a_lo = builder.mul(_load(builder, coords, builder.add(a_row, builder.add(
                        base, i))), a_length)
                    extent = loops.smax(builder.sub(
                        loops.smin(builder.add(a_lo, a_length), b_hi),
                        loops.smax(a_lo, b_lo)), zero)
                    builder.store(extent, builder.gep(rows, [builder.add(place, i)]))
                    builder.store(_mix(builder, builder.load(hashed), extent), hashed)

                loop(zero, per_node, over_senders)

            loop(zero, per_node, over_receivers)
            first = find_or_insert(loops, table, mask, rows, width, node,
                                   builder.load(hashed))
            builder.store(first, builder.gep(out, [builder.add(builder.mul(combo, nodes),
                                                               node)]))

        loop(zero, _load(builder, limits, combo), over_nodes)

    loop(zero, count, over_combos)
    builder.ret_void()
    return module


def build_groups_module() -> ir.Module:
    """`groups(ids, combo_of, first_key, held, counts, pairs, rank, nodes, mask, rows,
    table, out, found)`: the module docstring's `node_groups` (rows: nodes·(rank + 1)
    scratch; out holds sum(counts), found[0] = how many it was given)."""
    module = ir.Module(name=GROUPS)
    pointer = I64.as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        pointer, pointer, pointer, pointer, pointer, I64, I64, I64, I64, pointer, pointer,
        pointer, pointer]), GROUPS)
    (ids, combo_of, first_key, held, counts, pairs, rank, nodes, mask, rows, table,
     out, found) = function.args
    loops = Loops(function)
    builder, zero, one, loop = loops.builder, loops.zero, loops.one, loops.loop
    width = builder.add(rank, one)
    builder.store(zero, found)

    def over_pairs(pair: ir.Value) -> None:
        sender = _load(builder, held, pair)
        _clear(loops, table, mask)

        def over_nodes(node: ir.Value) -> None:
            place = builder.mul(node, width)
            hashed = loops.variable(zero)

            def put(slot: ir.Value, value: ir.Value) -> None:
                builder.store(value, builder.gep(rows, [builder.add(place, slot)]))
                builder.store(_mix(builder, builder.load(hashed), value), hashed)

            loop(zero, rank, lambda dim: put(dim, _load(builder, ids, builder.add(builder.mul(
                _load(builder, combo_of, builder.add(builder.mul(pair, rank), dim)), nodes),
                node))))
            put(rank, _load(builder, first_key, builder.add(builder.mul(sender, nodes), node)))
            first = find_or_insert(loops, table, mask, rows, width, node, builder.load(hashed))
            with builder.if_then(builder.icmp_signed("==", first, node)):
                given = builder.load(found)
                builder.store(builder.add(builder.mul(pair, nodes), node),
                              builder.gep(out, [given]))
                builder.store(builder.add(given, one), found)

        loop(zero, _load(builder, counts, pair), over_nodes)

    loop(zero, pairs, over_pairs)
    builder.ret_void()
    return module


_ids = compiled_once(build_ids_module, IDS, _IDS_SIGNATURE, "the node ids kernel")
_groups = compiled_once(build_groups_module, GROUPS, _GROUPS_SIGNATURE,
                        "the node groups kernel")


def _table(nodes: int) -> tuple[np.ndarray, int]:
    """A table of at least twice `nodes` slots (a power of two) and its mask."""
    size = 1 << max(1, (2 * nodes - 1).bit_length())
    return np.zeros(size, dtype=np.int64), size - 1


def dim_node_ids(coords: np.ndarray, combos: np.ndarray, limits: np.ndarray,
                 per_node: int) -> np.ndarray:
    """(combos, max(limits)) int64: the module docstring's (entries past a combo's limit
    unset), `coords` (S, devices) the grid coordinates (d // s) % f of each per-dim state,
    combos (C, 4), limits (C,)."""
    coords_, combos_, limits_ = (np.ascontiguousarray(array, dtype=np.int64)
                                 for array in (coords, combos, limits))
    nodes = int(limits_.max()) if len(limits_) else 0
    out = np.zeros((len(combos_), nodes), dtype=np.int64)
    if nodes and len(combos_):
        rows = np.empty(nodes * per_node * per_node, dtype=np.int64)
        table, mask = _table(nodes)
        _ids()(coords_.ctypes.data, combos_.ctypes.data, limits_.ctypes.data, len(combos_),
               coords_.shape[1], per_node, nodes, mask, rows.ctypes.data, table.ctypes.data,
               out.ctypes.data)
    return out


def node_groups(ids: np.ndarray, combo_of: np.ndarray, first_key: np.ndarray,
                held: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The module docstring's, `ids` (C, nodes) of `dim_node_ids`, combo_of (pairs, rank),
    first_key (senders, nodes), held and counts (pairs,)."""
    ids_, combo_of_, first_key_, held_, counts_ = (
        np.ascontiguousarray(array, dtype=np.int64)
        for array in (ids, combo_of, first_key, held, counts))
    nodes = ids_.shape[1]
    pairs, rank = combo_of_.shape
    out = np.empty(int(counts_.sum()), dtype=np.int64)
    found = np.zeros(1, dtype=np.int64)
    if nodes and pairs:
        rows = np.empty(nodes * (rank + 1), dtype=np.int64)
        table, mask = _table(nodes)
        _groups()(ids_.ctypes.data, combo_of_.ctypes.data, first_key_.ctypes.data,
                  held_.ctypes.data, counts_.ctypes.data, pairs, rank, nodes, mask,
                  rows.ctypes.data, table.ctypes.data, out.ctypes.data, found.ctypes.data)
    return out[:int(found[0])]
