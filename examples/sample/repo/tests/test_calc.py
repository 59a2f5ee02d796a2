import pytest

from calc import add, mean, median, round_half_up


def test_add():
    assert add(2, 3) == 5


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_empty():
    with pytest.raises(ValueError):
        median([])


def test_round_half_up_below_tie():
    assert round_half_up(2.4) == 2


def test_round_half_up_digits_below_tie():
    assert round_half_up(3.14159, 2) == 3.14
