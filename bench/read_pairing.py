r"""A served read beside the stack's limit (bench/README.md, "A served read beside the bare stack").

`GET /appointments/{id}` served by `agenda run` with its defaults (every read recorded in the
access record) and a bare waitress app on 4 threads doing one indexed SQLite lookup and
`json.dumps` (bench/bare_app.py), both on the small bench clinic, driven by wrk at 16
connections, A and B in turn, every other round the bare app first; then the same bare app with its
threads kept on one core, as `agenda run` keeps its own (docs/design.md, "One core"). Prints each
round's requests a second, each server's CPU time per request (its threads' time on a core, /proc),
the ratio (Agenda over bare), Agenda's p99, and the median ratios and p99.

    .venv/bin/python bench/read_pairing.py                   # about a minute; needs wrk (Debian's)
    .venv/bin/python bench/read_pairing.py --rounds 9 --seconds 4 --threads 4

Bounded: --rounds rounds of --seconds seconds a side, to 127.0.0.1 only; the servers it starts
are stopped by their process id; its files are in one temporary folder.
"""

import argparse
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import run  # bench/run.py: load_agenda, Process, signature
from core_speed import cpu_ns

WRK_RATE = re.compile(r"Requests/sec:\s+([\d.]+)")
WRK_COUNT = re.compile(r"(\d+) requests in")
WRK_P99 = re.compile(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", re.M)
UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(port, path, seconds, connections, header=None):
    """(requests a second, requests, p99 in ms) wrk drove against 127.0.0.1:port at `connections`
    connections; non-2xx refused."""
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", f"http://127.0.0.1:{port}{path}"]
    if header:
        command[1:1] = ["-H", header]
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30, check=True).stdout
    if "Non-2xx" in out:
        raise SystemExit(f"non-2xx answers from {path}:\n{out}")
    p99 = WRK_P99.search(out)
    return float(WRK_RATE.search(out)[1]), int(WRK_COUNT.search(out)[1]), float(p99[1]) * UNIT_MS[p99[2]]


def measured(server, port, path, options, header=None):
    """(requests a second, CPU milliseconds per request, p99 in ms) of one side's turn."""
    before = cpu_ns(server.process.pid)
    rate, count, p99 = wrk(port, path, options.seconds, options.connections, header)
    return rate, (cpu_ns(server.process.pid) - before) / 1e6 / max(count, 1), p99


def an_appointment_and_a_nif(db_path):
    conn = sqlite3.connect(db_path)
    try:
        (appointment_id,) = conn.execute("SELECT id FROM appointments WHERE status != 'cancelled' LIMIT 1").fetchone()
        (nif,) = conn.execute("SELECT nif FROM patients WHERE nif IS NOT NULL LIMIT 1").fetchone()
    finally:
        conn.close()
    return appointment_id, nif


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="paired rounds")
    parser.add_argument("--seconds", type=int, default=4, help="seconds a side and round")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=4, help="the bare app's threads")
    options = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")
    run.load_agenda(run.AGENDA_PATH)
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "small.db"
        subprocess.run([sys.executable, str(run.HERE / "generate.py"), str(db_path), "--appointments", "3000",
                        "--patients", "2000"], check=True, capture_output=True)
        appointment_id, nif = an_appointment_and_a_nif(db_path)
        ours = run.Process([sys.executable, str(run.AGENDA_PATH), "run", "--db", str(db_path), "--port", "0"],
                           env={"AGENDA_SECRET": run.SECRET})
        bare_command = [sys.executable, str(run.HERE / "bare_app.py"), str(db_path), "--threads", str(options.threads)]
        sides = {"ours": ours, "bare": run.Process(bare_command), "bare on one core": run.Process(
            bare_command + ["--one-core"])}
        try:
            path = f"/appointments/{appointment_id}"
            header = f"X-Signature: {run.signature('GET', path, b'')}"
            ratios, p99s = {"bare": [], "bare on one core": []}, []
            for number in range(options.rounds):
                figures = {}
                for side in (list(sides) if number % 2 == 0 else list(sides)[::-1]):
                    server = sides[side]
                    figures[side] = (measured(server, server.port, path, options, header) if side == "ours" else
                                     measured(server, server.port, f"/?nif={nif}", options))
                for side, kept in ratios.items():
                    kept.append(figures["ours"][0] / figures[side][0])
                p99s.append(figures["ours"][2])
                print(f"round {number + 1}: Agenda {figures['ours'][0]:.0f}/s ({figures['ours'][1]:.2f} ms CPU a"
                      f" request, p99 {figures['ours'][2]:.1f} ms); " + "; ".join(
                          f"{side} ({options.threads} threads) {figures[side][0]:.0f}/s ({figures[side][1]:.2f} ms, "
                          f"p99 {figures[side][2]:.1f} ms),"
                          f" ratio {ratios[side][-1]:.2f}" for side in ratios), flush=True)
            for side, kept in ratios.items():
                print(f"median ratio to the {side} over {options.rounds} rounds: {statistics.median(kept):.2f}")
            print(f"Agenda's median p99 at {options.connections} connections: {statistics.median(p99s):.1f} ms")
        finally:
            for server in sides.values():
                server.stop()


if __name__ == "__main__":
    main()
