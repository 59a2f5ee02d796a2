import os

import pytest

from calc import add, mul


# The task's own marks read the environment the package runs in: the
# legacy backend's add is known to be off, and the slow table is only run
# when asked for.
@pytest.mark.xfail(os.environ.get("CALC_BACKEND") == "legacy", reason="the legacy backend's add is off", strict=True)
def test_add():
    assert add(2, 3) == 5
    assert add(-4, 4) == 0


def test_mul():
    assert mul(2, 3) == 6


@pytest.mark.xfail(not os.environ.get("CALC_SLOW_TESTS"), run=False, reason="slow: set CALC_SLOW_TESTS=1 to run it")
def test_mul_table():
    for i in range(50):
        assert mul(i, 3) == 3 * i
