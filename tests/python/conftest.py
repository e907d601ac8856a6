"""tilejit's Python tests: the package from python/ (or installed), the
library from $TILEJIT_LIB (CTest sets it to the build's)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
