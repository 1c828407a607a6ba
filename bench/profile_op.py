"""Profile one operation of our side: where its time goes (cProfile, sorted by own time).

    python bench/profile_op.py sqlite load20            # also: write, load200, tokens2k, tokens20k, run
    python bench/profile_op.py redis run --length 100000 --calls 300
    python bench/profile_op.py sqlite write --pyinstrument   # a call tree, if pyinstrument is installed

It fills one session (setup, not profiled), warms up, then profiles ``--calls`` calls.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import backends as b  # noqa: E402
import workload as w  # noqa: E402
from run import RUN_WINDOW, Setup, _agent, _model_server, _services_env  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", choices=("in_memory", "sqlite", "postgres", "redis", "mongodb"))
    parser.add_argument("op", choices=("write", "load20", "load200", "tokens2k", "tokens20k", "run"))
    parser.add_argument("--length", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--pyinstrument", action="store_true")
    args = parser.parse_args()
    _services_env()
    directory = tempfile.mkdtemp(prefix="omnisync-profile-")
    setup = Setup(args.store, directory, b.RoundTrips())
    ours = b.Ours(setup.store)
    session = "profiled"
    ours.fill(session, args.length)
    with _model_server() as url:
        agent = _agent(setup.store, url)
        calls = {
            "write": lambda: ours.write(session),
            "load20": lambda: ours.load(session, 20),
            "load200": lambda: ours.load(session, 200),
            "tokens2k": lambda: ours.tokens(session, w.TOKEN_BUDGET),
            "tokens20k": lambda: ours.tokens(session, w.LARGE_TOKEN_BUDGET),
            "run": lambda: agent.run(w.USER_TEXTS[0], session_id=session),
        }
        fn = calls[args.op]
        for _ in range(20):
            fn()
        started = time.perf_counter()
        if args.pyinstrument:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0001)
            profiler.start()
            for _ in range(args.calls):
                fn()
            profiler.stop()
            print(profiler.output_text(unicode=True, color=False, show_all=False))
        else:
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(args.calls):
                fn()
            profile.disable()
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(args.top)
            print(out.getvalue())
        elapsed = time.perf_counter() - started
        print(f"{args.store} {args.op} at {args.length:,}: {elapsed / args.calls * 1e6:,.0f} µs a call under the profiler "
              f"(window {RUN_WINDOW} for run)")
        agent.cleanup()
    setup.close()
    shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
