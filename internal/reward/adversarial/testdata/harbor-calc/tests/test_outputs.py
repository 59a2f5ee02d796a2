from calc import add, mul


def test_add():
    assert add(2, 3) == 5
    assert add(-4, 4) == 0


def test_mul():
    assert mul(2, 3) == 6
