"""``storage.vectors.base.stored_point``: what an engine returns for one point, read back as
memvault's values (a dense vector of floats, or none when it is not one)."""

from __future__ import annotations

import pytest

from memvault.storage.vectors.base import DENSE, stored_point

ID = "0b7a2f0e-3c1d-4e5f-8a9b-0c1d2e3f4a5b"


@pytest.mark.parametrize(("given", "read"), [
    ([0.5, -0.25, 1.0], [0.5, -0.25, 1.0]),  # what an engine returns
    ([1, 0.5, 0], [1.0, 0.5, 0.0]),  # whole numbers are floats
    ([True, 0.5], [1.0, 0.5]),  # as float() reads them
    ([0.5, "0.5"], []),  # not a vector
    ([0.5, None], []),
    ((0.5, 0.25), []),  # not a list
    ([], []),
])
def test_a_dense_vector_is_read_as_floats_or_not_at_all(given: object, read: list[float]) -> None:
    got = stored_point(ID, {DENSE: given}, {}).dense
    assert got == read and all(type(x) is float for x in got)


def test_the_vector_read_is_a_copy() -> None:
    given = [0.5, 0.25]
    got = stored_point(ID, {DENSE: given}, {"parent": None})
    given[0] = 9.0
    assert got.dense == [0.5, 0.25] and got.id == ID
