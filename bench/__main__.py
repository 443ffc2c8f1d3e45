"""`python3 -m bench [--quick]` from the repository root: the performance suite (see bench/README.md)."""

import sys

from bench.run import main

sys.exit(main())
