"""Run a script under a cassette: python -m omnisync.testing --cassette FILE [--record-mode MODE] script.py [args ...]"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

from .cassettes import RECORD_MODES, cassette


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m omnisync.testing", description=__doc__)
    parser.add_argument("--cassette", required=True, help="the cassette file (.yaml)")
    parser.add_argument("--record-mode", choices=RECORD_MODES, default="none")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    path = Path(options.cassette)
    sys.argv = [options.script, *options.args]
    with cassette(path.name, path.parent, record_mode=options.record_mode):
        runpy.run_path(options.script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
