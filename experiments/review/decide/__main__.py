"""``python -m experiments.review.decide --minutes 30`` (``make decide``): see the package."""

import argparse
import signal
import sys

from . import __doc__ as DOC
from . import run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.review.decide", description=DOC.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="the time to spend (default 30)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan, buy nothing")
    ap.add_argument("--finding", default=None, help="buy for this finding alone, whatever its forecast")
    ap.add_argument("--rounds", type=int, default=1, help="with --finding: rounds to buy (default 1)")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C: passed on to dvc
    return run(a.minutes, dry_run=a.dry_run, finding=a.finding, rounds=a.rounds)


if __name__ == "__main__":
    sys.exit(main())
