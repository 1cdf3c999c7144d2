"""``mood-poller ARGS`` with every statement counted (``_common.Statements``).

Not a benchmark itself (the leading underscore): ``bench/api.py`` runs ``serve``
through it.  At exit it writes the counts as JSON to the file named by
``$BENCH_STATEMENTS``.  Run: ``python bench/_counted_serve.py serve ...``.
"""

from __future__ import annotations

import atexit
import json
import os
import sys

import _common

from poller.cli import main

statements = _common.Statements().start()


@atexit.register
def _write() -> None:
    with open(os.environ["BENCH_STATEMENTS"], "w") as f:
        json.dump(statements.counts, f)


if __name__ == "__main__":
    main(sys.argv[1:])
