"""The calc build step: byte-compiles the package.

It stands in for an install step that runs the repository's own code, as
`pip install -e .` runs setup.py: the calc-swebench eval script runs it
before the hidden tests are put in place.
"""

import compileall
import sys

sys.exit(0 if compileall.compile_dir("calc", quiet=1) else 1)
