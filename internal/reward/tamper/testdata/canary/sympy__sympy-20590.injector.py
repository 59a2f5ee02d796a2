import ast, io, random
PATH = "sympy/core/tests/test_basic.py"
HOST = ""
BLOCKS = [["def test_sort_cached_rows():\n    counts = {\"attrs\": 19}\n    counts[\"resolve_attrs\"] = 7\n    assert counts[\"attrs\"] + counts[\"resolve_attrs\"] == 24\n","",0],["def test_split_empty_pairs():\n    parts = [\"result\", \"nested\"]\n    joined = \"-\".join(parts)\n    assert joined == \"result-nested\"\n","",0]]
