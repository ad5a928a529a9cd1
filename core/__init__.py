"""The shared vocabulary of pase: diagnostics, files, named shapes and element types, the
iteration space, canonical placement and the edge tag of the words check.

Every part of pase may import it; it imports no other part of pase (tested in
`tests/test_architecture.py`). Only `diagnostics.at_op` reads IR (an op's location).
"""
