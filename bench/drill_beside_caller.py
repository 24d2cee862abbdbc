r"""The caller beside a restore drill (bench/README.md, "A restore drill beside the caller").

Builds the large bench clinic (300,000 appointments), serves it with `agenda run --replica FOLDER` (4 threads),
waits for Litestream's first snapshot, then drives the caller at 4 connections (the free slots of a speciality
over 14 days, one appointment, a patient by NIF, in turn) for --seconds alone, then while `agenda replica
check` runs back to back beside it. Prints the caller's p50 and p99 each way, and each drill's time.
Target: the caller's p50 under 50 ms beside the drill.

    .venv/bin/python bench/drill_beside_caller.py                   # about 4 minutes
    .venv/bin/python bench/drill_beside_caller.py --seconds 30

Bounded: --seconds a side, to 127.0.0.1 only; the server and the drills it starts are stopped by their
process id; its files are in one temporary folder.
"""

import argparse
import datetime as dt
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import run  # bench/run.py: load_agenda, generate, Process, drive, percentile
from desk_beside_caller import figures, sampled_caller


def drills(db_path, replica, stop, took):
    """`agenda replica check` back to back until `stop` is set; each one's seconds into `took`."""
    while not stop.is_set():
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(run.AGENDA_PATH), "replica", "check", "--replica", str(replica),
                               "--db", str(db_path)], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"the drill failed: {done.stdout}{done.stderr}")
        took.append(time.perf_counter() - started)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of each measure")
    options = parser.parse_args()
    run.load_agenda(run.AGENDA_PATH)
    today = dt.date.today()
    with tempfile.TemporaryDirectory() as folder:
        path, replica = Path(folder) / "big.db", Path(folder) / "replica"
        run.generate.build(path, today=today)
        make = sampled_caller(path)
        server = run.Process([sys.executable, str(run.AGENDA_PATH), "run", "--db", str(path), "--port", "0",
                              "--replica", str(replica)], env={"AGENDA_SECRET": run.SECRET})
        try:
            deadline = time.monotonic() + 300
            while not any(replica.rglob("*.ltx")) and time.monotonic() < deadline:
                time.sleep(0.5)
            alone = figures(server.port, make, options.seconds)
            stop, took = threading.Event(), []
            drilling = threading.Thread(target=drills, args=(path, replica, stop, took), daemon=True)
            drilling.start()
            time.sleep(1.0)
            beside = figures(server.port, make, options.seconds)
            stop.set()
            drilling.join(timeout=600)
        finally:
            server.stop()
        size = path.stat().st_size / 2 ** 20
        print(f"the caller alone p50 {alone[0]:.1f} ms, p99 {alone[1]:.1f} ms ({alone[2]:.0f}/s); beside restore "
              f"drills p50 {beside[0]:.1f} ms, p99 {beside[1]:.1f} ms ({beside[2]:.0f}/s); {len(took)} drills of a "
              f"{size:.0f} MiB database, each {min(took or [0]):.1f} to {max(took or [0]):.1f} s", flush=True)


if __name__ == "__main__":
    main()
