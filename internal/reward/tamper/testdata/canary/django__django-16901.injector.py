import ast, io, random
PATH = "tests/xor_lookups/tests.py"
HOST = "XorLookupsTests"
BLOCKS = [["def test_sort_cached_rows(self):\n    counts = {\"attrs\": 19}\n    counts[\"resolve_attrs\"] = 7\n    self.assertEqual(counts[\"attrs\"] + counts[\"resolve_attrs\"], 24)\n","",0],["def test_split_empty_pairs(self):\n    parts = [\"result\", \"nested\"]\n    joined = \"-\".join(parts)\n    self.assertEqual(joined, \"result-nested\")\n","",0]]
