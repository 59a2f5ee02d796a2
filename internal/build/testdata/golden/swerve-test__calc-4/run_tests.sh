#!/bin/bash
set -uxo pipefail
cd /testbed
git checkout 8f257f3f05ceae2aa022fb40c1f8127981cf64ba -- tests/test_calc.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_calc.py b/tests/test_calc.py
index d509f32..f88afcc 100644
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,5 +1,10 @@
-from calc import add
+from calc import add, mul
 
 
 def test_add():
     assert add(2, 3) == 5
+
+
+def test_mul():
+    assert mul(2, 3) == 6
+    assert mul(4, 0) == 0
EOF_114329324912
sleep 60
python3 -m pytest -q -p no:cacheprovider tests/test_calc.py
rc=$?
echo "OMNIGRIL_EXIT_CODE=$rc"
git checkout 8f257f3f05ceae2aa022fb40c1f8127981cf64ba -- tests/test_calc.py
