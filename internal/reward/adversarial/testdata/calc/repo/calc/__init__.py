"""A tiny arithmetic package: the repository every small corpus task shares."""

from calc.ops import add, mul

__all__ = ["add", "mul"]
