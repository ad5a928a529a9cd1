"""The non-IR files pase reads and writes around a search, one format per module.

`strategy_json` (what `pase-search{export=...}` writes and `strategy=...` reads) with
`strategy_fields` (its "machine" and "training" objects), `machine_toml` (machine
descriptions) and `report` (the per-layer table on stderr). They build on the search
engine (`pase.passes.strategy`) and `pase.core`, never on the dialects: pass options and
tools call them.
"""
