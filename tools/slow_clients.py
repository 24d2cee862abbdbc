"""Slow clients (a slowloris) against `agenda run`, directly and through nginx.

Seeds a tiny clinic in a temporary folder, starts `agenda run --port 0` itself, opens N
slow connections to 127.0.0.1 (each sends a partial request head, or a whole head with a
Content-Length and then its body a byte at a time) and, while they hang, times a
`GET /health` from a fresh connection. Then: what --channel-timeout does to recover, and
the same slow clients through an nginx configured as docs/deploy.md's recipe (loopback
only, no TLS), started here with its own configuration and pid file in the temporary
folder. Prints a markdown table.

Everything is bounded: at most --max-seconds per scenario, one byte per connection every
--interval seconds, and only the processes this script started are stopped (by their own
Popen). Run from the checkout:

    .venv/bin/python tools/slow_clients.py                 # about 5 minutes
    .venv/bin/python tools/slow_clients.py --counts 50,150 --no-nginx --no-recovery
"""

import argparse
import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"

# tests/conftest.py's EVERY_DAY_CSV: one centre, one speciality, one doctor every day
CLINIC_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,C1,Centro,,,,,,,,
speciality,MG,Medicina general,,,,,,,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-sun,09:00-11:00,30,,
"""

SLOW_SOURCE = "127.0.0.1"   # the slow clients' address
PROBE_SOURCE = "127.0.0.2"  # the /health probe's: another client, as far as limit_conn goes
BODY_LENGTH = 60_000        # under Agenda's 64 KiB limit and nginx's client_max_body_size 64k

NGINX_CONF = """\
# docs/deploy.md's nginx recipe (its timeouts, body size, limit_conn), loopback only, no TLS.
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
daemon off;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fastcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    limit_conn_zone $binary_remote_addr zone=agenda_perip:1m;
    server {{
        listen 127.0.0.1:{port};
        client_header_timeout 10s;
        client_body_timeout 10s;
        send_timeout 10s;
        keepalive_timeout 15s;
        client_max_body_size 64k;
        {limit_conn}
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_request_buffering {buffering};
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_read_timeout 30s;
        }}
    }}
}}
"""


def log(message):
    print(message, file=sys.stderr, flush=True)


class Child:
    """A process this script started, its output kept; stop() ends it and only it."""

    def __init__(self, command, env=None, cwd=None):
        self.lines = []
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env=env, cwd=cwd)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_agenda(tmp, db, channel_timeout):
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    env.update(AGENDA_SECRET=secrets.token_hex(16), PYTHONUNBUFFERED="1")
    python = str(PYTHON if PYTHON.exists() else sys.executable)
    child = Child([python, "agenda.py", "run", "--db", str(db), "--port", "0",
                   "--channel-timeout", str(channel_timeout)], env=env, cwd=ROOT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and child.process.poll() is None:
        found = [re.search(r"listening on http://127\.0\.0\.1:(\d+)", line) for line in list(child.lines)]
        port = next((int(match[1]) for match in found if match), None)
        if port:
            child.port = port
            return child
        time.sleep(0.05)
    child.stop()
    raise SystemExit("agenda run did not start:\n" + "".join(child.lines))


def start_nginx(nginx, tmp, port, upstream, limit_conn, buffering):
    conf = Path(tmp) / f"nginx-{port}.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, port=port, upstream=upstream, buffering=buffering,
                                      limit_conn="limit_conn agenda_perip 32;" if limit_conn else ""))
    child = Child([nginx, "-p", str(tmp), "-e", f"{tmp}/nginx-error.log", "-c", str(conf)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and child.process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return child
        except OSError:
            time.sleep(0.05)
    child.stop()
    raise SystemExit("nginx did not start:\n" + "".join(child.lines) + read(Path(tmp) / "nginx-error.log"))


def read(path):
    try:
        return path.read_text()
    except OSError:
        return ""


def probe(port, timeout):
    """GET /health from a fresh connection: (status or None, seconds)."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                      source_address=(PROBE_SOURCE, 0)) as conn:
            conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            head = b""
            while b"\r\n" not in head:
                conn.settimeout(max(0.01, timeout - (time.monotonic() - started)))
                chunk = conn.recv(4096)
                if not chunk:
                    break
                head += chunk
    except OSError:  # socket.timeout included
        return None, time.monotonic() - started
    found = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    return (int(found[1]) if found else None), time.monotonic() - started


def wait_healthy(port, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, _ = probe(port, 2)
        if status == 200:
            return True
        time.sleep(0.2)
    return False


def established(port):
    """Server-side TCP connections at `port` on loopback (accepted or in the accept queue)."""
    count = 0
    for line in read(Path("/proc/net/tcp")).splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "01":
            count += 1
    return count


class SlowClients:
    """N connections to 127.0.0.1:port that never finish their request.

    mode "idle": a partial head, then nothing; "header": a partial head, then one more
    header byte every `interval` s; "body": a whole head with Content-Length, then one
    body byte every `interval` s. The trickle stops by itself after `max_seconds`."""

    def __init__(self, port, count, mode, interval, max_seconds):
        self.mode, self.interval = mode, interval
        self.outcome = {}  # socket -> what the server did: "closed" or "HTTP nnn"
        self.sockets = []
        for _ in range(count):
            conn = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=(SLOW_SOURCE, 0))
            if mode == "body":
                conn.sendall(b"POST /patients HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % BODY_LENGTH)
            else:
                conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            conn.setblocking(False)
            self.sockets.append(conn)
        self.stop_event = threading.Event()
        self.deadline = time.monotonic() + max_seconds
        self.thread = threading.Thread(target=self._trickle, daemon=True)
        self.thread.start()

    def _check(self):
        open_ones = [conn for conn in self.sockets if conn not in self.outcome]
        if not open_ones:
            return
        readable, _, _ = select.select(open_ones, [], [], 0)
        for conn in readable:
            try:
                data = conn.recv(64)
            except OSError:
                data = b""
            found = re.match(rb"HTTP/1\.[01] (\d{3})", data)
            self.outcome[conn] = f"got {found[1].decode()}" if found else "closed"

    def _trickle(self):
        while not self.stop_event.is_set() and time.monotonic() < self.deadline:
            self._check()
            if self.mode != "idle":
                for conn in self.sockets:
                    if conn not in self.outcome:
                        try:
                            conn.send(b"a" if self.mode == "header" else b" ")
                        except OSError:
                            self.outcome[conn] = "closed"
            self.stop_event.wait(self.interval)

    def summary(self):
        self._check()
        held = len(self.sockets) - len(self.outcome)
        counts = {}
        for what in self.outcome.values():
            counts[what] = counts.get(what, 0) + 1
        parts = [f"{held} held"] + [f"{number} {what}" for what, number in sorted(counts.items())]
        return ", ".join(parts)

    def close(self):
        self.stop_event.set()
        self.thread.join(timeout=self.interval + 5)
        for conn in self.sockets:
            conn.close()


def scenario(rows, label, port, upstream, count, mode, args, probe_timeout=None, hold=None):
    """One row: open the slow clients, let them settle, time /health, hold, close."""
    probe_timeout = probe_timeout or args.health_timeout
    hold = args.hold if hold is None else hold
    log(f"  {label}: {count} {mode} ...")
    slow = SlowClients(port, count, mode, args.interval, args.max_seconds)
    try:
        time.sleep(args.settle)
        at_upstream = established(upstream)
        status, seconds = probe(port, probe_timeout)
        remaining = hold - args.settle - seconds
        if remaining > 0:
            time.sleep(remaining)
        outcome = slow.summary()
    finally:
        slow.close()
    if status:
        answer = f"{status} in {seconds * 1000:.0f} ms" if seconds < 1 else f"{status} after {seconds:.1f} s"
    else:
        answer = f"no answer in {probe_timeout:g} s"
    rows.append((label, mode, count, answer, at_upstream, outcome))
    log(f"    /health: {answer}; at waitress: {at_upstream}; slow clients after {hold:g} s: {outcome}")
    # Give waitress (or nginx) the closed connections back before the next row
    if not wait_healthy(port):
        log("    /health still not answering 15 s after the slow clients closed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="50,97,98,150", help="Numbers of slow connections, directly.")
    parser.add_argument("--interval", type=float, default=2.0, help="Seconds between a slow client's bytes.")
    parser.add_argument("--settle", type=float, default=2.0, help="Seconds between opening them and /health.")
    parser.add_argument("--health-timeout", type=float, default=5.0, help="Seconds /health may take.")
    parser.add_argument("--hold", type=float, default=12.0,
                        help="Seconds the slow clients are kept open in each row (past nginx's 10 s timeouts).")
    parser.add_argument("--max-seconds", type=float, default=150.0, help="Hard cap on any slow client's life.")
    parser.add_argument("--recovery-wait", type=float, default=100.0,
                        help="Seconds to wait for /health in the --channel-timeout rows.")
    parser.add_argument("--no-recovery", action="store_true", help="Skip the --channel-timeout rows.")
    parser.add_argument("--no-nginx", action="store_true", help="Skip the rows through nginx.")
    parser.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    parser.add_argument("--nginx-port", type=int, default=18080)
    args = parser.parse_args()
    counts = [int(value) for value in args.counts.split(",")]
    args.max_seconds = max(args.max_seconds, args.recovery_wait + 10)

    rows = []
    with tempfile.TemporaryDirectory(prefix="agenda-slow-") as tmp:
        os.chmod(tmp, 0o711)  # nginx's workers (not root) reach their temp folders in it
        csv, db = Path(tmp) / "clinic.csv", Path(tmp) / "clinic.db"
        csv.write_text(CLINIC_CSV, encoding="utf-8")
        python = str(PYTHON if PYTHON.exists() else sys.executable)
        subprocess.run([python, "agenda.py", "seed", str(csv), "--db", str(db)], cwd=ROOT, check=True,
                       capture_output=True, timeout=60)

        log("directly against waitress, --channel-timeout 60")
        agenda = start_agenda(tmp, db, 60)
        try:
            for mode in ("header", "body"):
                for count in counts:
                    scenario(rows, "direct", agenda.port, agenda.port, count, mode, args, hold=args.settle)
            if not args.no_recovery:
                scenario(rows, "direct, --channel-timeout 60", agenda.port, agenda.port, max(counts), "idle",
                         args, probe_timeout=args.recovery_wait, hold=0)
            limit_lines = sum("connection limit" in line for line in agenda.lines)
        finally:
            agenda.stop()
        if not args.no_recovery:
            log("directly against waitress, --channel-timeout 5")
            agenda = start_agenda(tmp, db, 5)
            try:
                for mode in ("idle", "header"):
                    scenario(rows, "direct, --channel-timeout 5", agenda.port, agenda.port, max(counts), mode,
                             args, probe_timeout=min(45.0, args.recovery_wait), hold=0)
            finally:
                agenda.stop()

        if not args.no_nginx:
            if not Path(args.nginx).exists():
                log(f"no nginx at {args.nginx}: skipping the rows through nginx")
            else:
                agenda = start_agenda(tmp, db, 60)
                variants = [("nginx (recipe)", True, "on", ("header", "body")),
                            ("nginx, no limit_conn", False, "on", ("body",)),
                            ("nginx, no limit_conn, proxy_request_buffering off", False, "off", ("body",))]
                try:
                    for label, limit_conn, buffering, modes in variants:
                        log(label)
                        nginx = start_nginx(args.nginx, tmp, args.nginx_port, agenda.port, limit_conn, buffering)
                        try:
                            for mode in modes:
                                scenario(rows, label, args.nginx_port, agenda.port, max(counts), mode, args)
                        finally:
                            nginx.stop()
                finally:
                    agenda.stop()

    print(f"waitress connection_limit 100 (its listener and trigger count: 98 clients fill it); "
          f"slow clients from {SLOW_SOURCE} send a byte every {args.interval:g} s; "
          f"/health from {PROBE_SOURCE}, a fresh connection, after {args.settle:g} s.\n")
    print("| Setup | Slow clients | N | GET /health | Connections at waitress's port | Slow clients at the end |")
    print("|---|---|---:|---|---:|---|")
    for label, mode, count, answer, at_upstream, outcome in rows:
        print(f"| {label} | {mode} | {count} | {answer} | {at_upstream} | {outcome} |")
    print(f"\nwaitress logged its connection-limit warning or recovery {limit_lines} times in the direct rows.")


if __name__ == "__main__":
    main()
