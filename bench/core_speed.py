"""Does a latency follow how fast this host's cores run? (bench/README.md, "What the misses show")

The same short runs, round after round, on the large clinic: each run's p50 and p99 beside the
server's CPU time per request (summed over its threads from /proc's schedstat). A request does
the same work in every round, so that CPU time says how fast the cores ran it; the rounds are
then split into the fastest third and the slowest third.

    python bench/core_speed.py                          # builds the large clinic in a temporary folder
    python bench/core_speed.py --db /tmp/big.db --rounds 15
"""

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  bench/run.py: the server, the workload and the load driver

RUNS = (("GET /appointments?date", 4), (run.RANGE, 4), (run.AVAILABILITY, 4), (run.AVAILABILITY, 1), ("GET /health", 4))


def cpu_ns(pid):
    """Nanoseconds the process's threads have run on a core."""
    return sum(int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
               for task in os.listdir(f"/proc/{pid}/task"))


def rounds(db_path, count, requests, seconds):
    """{(endpoint, connections): [(server CPU ms a request, p50, p99) a round]}."""
    server = run.agenda_server(db_path)
    seen = {key: [] for key in RUNS}
    try:
        endpoints = dict(run.workload(db_path, dt.date.today())[0])
        for _ in range(count):
            for name, connections in RUNS:
                before = cpu_ns(server.process.pid)
                _, latencies, _ = run.drive(server.port, endpoints[name], connections, requests, seconds)
                used = (cpu_ns(server.process.pid) - before) / len(latencies) / 1e6
                seen[name, connections].append((used, run.percentile(latencies, 0.5), run.percentile(latencies, 0.99)))
    finally:
        server.stop()
    return seen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="a large clinic built by bench/generate.py (default: build one)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--requests", type=int, default=400, help="most requests a run")
    parser.add_argument("--seconds", type=float, default=3.0, help="most seconds a run")
    options = parser.parse_args()
    if options.rounds < 1 or options.requests < 1:
        parser.error("--rounds and --requests must be at least 1")
    run.load_agenda(run.ROOT / "agenda.py")
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(options.db) if options.db else Path(folder) / "big.db"
        if not options.db:
            run.generate.build(db_path, today=dt.date.today())
        seen = rounds(db_path, options.rounds, options.requests, options.seconds)
    print(f"{options.rounds} rounds, at most {options.requests} requests or {options.seconds:g} s a run; "
          "server CPU ms a request, then p50 and p99 in ms, as medians of the third of the rounds:\n")
    print("| run | CPU, fastest third | p50 | p99 | CPU, slowest third | p50 | p99 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (name, connections), figures in seen.items():
        figures.sort()
        third = max(1, len(figures) // 3)
        fast, slow = figures[:third], figures[-third:]
        cells = [f"{statistics.median(f[k] for f in part):.2f}" for part in (fast, slow) for k in range(3)]
        print(f"| {name} x{connections} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
