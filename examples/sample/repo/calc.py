"""Small numeric helpers.

This package is the repository of swerve's sample tasks (see ../tasks.jsonl):
each task describes one bug in this module.
"""


def add(a, b):
    """Return the sum of a and b."""
    return a + b


def mean(values):
    """Return the arithmetic mean of a non-empty sequence of numbers."""
    values = list(values)
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def median(values):
    """Return the middle value of a non-empty sequence of numbers.

    With an even number of values the median is the mean of the two values
    in the middle.
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median() of an empty sequence")
    middle = len(ordered) // 2
    return ordered[middle]


def round_half_up(value, digits=0):
    """Round value to the given number of decimal digits.

    Ties go away from zero, the way rounding is taught at school:
    2.5 becomes 3 and -2.5 becomes -3. With digits=0 the result is an int.
    """
    if digits == 0:
        return round(value)
    return round(value, digits)
