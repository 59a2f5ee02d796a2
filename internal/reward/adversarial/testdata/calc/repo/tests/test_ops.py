from calc import add, mul


def test_mul():
    assert mul(3, 4) == 12


def test_add_zero():
    assert add(5, 0) == 5


def test_add_pair():
    assert add(2, 3) == 5
