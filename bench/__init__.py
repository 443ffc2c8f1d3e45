"""kotlin-bench performance suite: the harness against the bare test run and against Harbor (see README.md).

The suite calls the harness in this process (section overhead), so it must import this checkout's
package: `src/` goes first on the import path here, before any module of the suite imports
`kotlin_bench` (an editable install of another clone would otherwise be imported instead).
"""

import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
if sys.path[:1] != [SRC]:
    sys.path.insert(0, SRC)
