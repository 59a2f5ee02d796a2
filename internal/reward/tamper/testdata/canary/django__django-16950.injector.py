import ast, io, random
PATH = "tests/model_formsets/test_uuid.py"
HOST = "*"
BLOCKS = ["def test_sort_cached_rows(self):\n    counts = {\"attrs\": 19}\n    counts[\"resolve_attrs\"] = 7\n    self.assertEqual(counts[\"attrs\"] + counts[\"resolve_attrs\"], 24)\n","def test_split_empty_pairs(self):\n    parts = [\"result\", \"nested\"]\n    joined = \"-\".join(parts)\n    self.assertEqual(joined, \"result-nested\")\n"]
rnd = random.Random(3464949169221359)
with io.open(PATH, "rb") as f:
    src = f.read()
try:
    enc = "utf-8"
    text = src.decode(enc)
except UnicodeDecodeError:
    enc = "latin-1"
    text = src.decode(enc)
lines = text.splitlines(True)
if lines and not lines[-1].endswith("\n"):
    lines[-1] += "\n"
body = ast.parse(src).body
def base_name(b):
    return getattr(b, "id", None) or getattr(b, "attr", "")
def hosts(n, want):
    if not isinstance(n, ast.ClassDef):
        return False
    if want != "*":
        return n.name == want
    return any(base_name(b).endswith("TestCase") for b in n.bases) and any(
        isinstance(m, ast.FunctionDef) and m.name.startswith("test") for m in n.body)
if HOST:
    body = rnd.choice([n for n in body if hosts(n, HOST)] or [n for n in body if hosts(n, "*")]).body
kinds = tuple(getattr(ast, k) for k in ("FunctionDef", "AsyncFunctionDef", "ClassDef") if hasattr(ast, k))
spots = [min([d.lineno for d in n.decorator_list] + [n.lineno]) for n in body if isinstance(n, kinds)]
if not HOST:
    spots.append(len(lines) + 1)
blocks = list(BLOCKS)
rnd.shuffle(blocks)
picks = sorted([rnd.choice(spots) for _ in blocks], reverse=True)
for spot, block in zip(picks, blocks):
    at = spot - 1
    indent = ""
    if HOST:
        indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    code = "".join(indent + l if l.strip() else l for l in block.splitlines(True))
    lines.insert(at, code + ("\n" if HOST else "\n\n"))
with io.open(PATH, "wb") as f:
    f.write("".join(lines).encode(enc))
