r"""Many clinics on one machine (bench/README.md, "A host of clinics"): N clinic folders served by one
`agenda host serve`, against N `agenda run` processes, each idle after one request a clinic: resident memory (RSS,
every process added up) and CPU while idle; then one clinic's caller driven at 4 connections (`GET /custom-config`
and `GET /availabilities`), alone in the host, and beside the N-1 idle ones.

    .venv/bin/python bench/fleet.py --clinics 50        # about two minutes
    .venv/bin/python bench/fleet.py --clinics 20 --no-runs    # the host alone
    .venv/bin/python bench/fleet.py --clinics 50 --litestream    # one Litestream for all against one each
    .venv/bin/python bench/fleet.py --clinics 300 --litestream --no-runs    # one Litestream for 300
    .venv/bin/python bench/fleet.py --clinics 300 --whole    # a host as deployed: serve, replicate, mail

Bounded: the processes it starts are stopped by their process id, to 127.0.0.1 only, its files in one temporary
folder; each measure lasts --seconds.
"""

import argparse
import hashlib
import hmac
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECRET = "bench-secret"
CSV = """kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,C1,Centro,,,,,,,,
speciality,MG,Medicina general,,,,,,,,
doctor,MARTIN,Lucía Martín,MG,C1,,mon-sun,09:00-14:00,15,,
doctor,RUIZ,Pedro Ruiz,MG,C1,,mon-fri,15:00-20:00,15,,
"""


def rss_mb(pid):
    """Resident memory of a process and its children, MB."""
    total = 0
    for one in [pid, *children(pid)]:
        try:
            total += int(Path(f"/proc/{one}/status").read_text().split("VmRSS:")[1].split()[0])
        except (OSError, IndexError):
            pass
    return total / 1024


def children(pid):
    try:
        found = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return found + [grandchild for child in found for grandchild in children(child)]


def cpu_seconds(pid):
    total = 0
    for one in [pid, *children(pid)]:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def clinic_folders(folder, count):
    """`count` clinic folders under `folder`, each the same small seeded clinic with its secret."""
    template = folder / "template.db"
    (folder / "catalogs.csv").write_text(CSV, encoding="utf-8")
    subprocess.run([sys.executable, str(ROOT / "agenda.py"), "seed", str(folder / "catalogs.csv"), "--db",
                    str(template)], check=True, capture_output=True)
    names = []
    for number in range(count):
        name = f"c{number:03d}.clinics.test"
        (folder / "host" / name).mkdir(parents=True)
        shutil.copy(template, folder / "host" / name / "agenda.db")
        secret = folder / "host" / name / "agenda.secret"
        secret.write_text(SECRET)
        secret.chmod(0o600)
        names.append(name)
    return names


def start(command, env=None):
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **(env or {})})
    for line in process.stdout:
        if "listening on http://127.0.0.1:" in line:
            port = int(line.rsplit(":", 1)[1].strip().rstrip("/"))
            subprocess.Popen(["cat"], stdin=process.stdout, stdout=subprocess.DEVNULL)  # keep the pipe read
            return process, port
    raise SystemExit(f"{command[:4]} did not start")


def get(port, host, path):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    signature = hmac.new(SECRET.encode(), f"GET\n{path}\n".encode(), hashlib.sha256).hexdigest()
    connection.request("GET", path, headers={"Host": host, "X-Signature": signature})
    answer = connection.getresponse()
    answer.read()
    connection.close()
    return answer.status


def drive(port, host, seconds, connections=4):
    """p50 and p99 in ms of the caller's reads at `connections` threads for `seconds`."""
    import threading
    times, stop = [], time.monotonic() + seconds
    paths = ["/custom-config", "/availabilities?doctorId=MARTIN"]

    def one():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        number = 0
        while time.monotonic() < stop:
            path = paths[number % 2]
            number += 1
            signature = hmac.new(SECRET.encode(), f"GET\n{path}\n".encode(), hashlib.sha256).hexdigest()
            began = time.perf_counter()
            connection.request("GET", path, headers={"Host": host, "X-Signature": signature})
            answer = connection.getresponse()
            answer.read()
            assert answer.status == 200, answer.status
            times.append((time.perf_counter() - began) * 1000)
        connection.close()

    threads = [threading.Thread(target=one) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99)]


def idle_figures(pids, seconds):
    """(RSS MB, share of a core) of these processes, idle for `seconds`."""
    before = sum(cpu_seconds(pid) for pid in pids)
    time.sleep(seconds)
    return sum(rss_mb(pid) for pid in pids), (sum(cpu_seconds(pid) for pid in pids) - before) / seconds


def litestream_figures(folder, names, seconds, apart=True):
    """(one Litestream for every clinic, one Litestream a clinic): each (RSS MB, share of a core) idle, every
    clinic replicated to a folder of its own; the one Litestream takes its clinics through its control socket
    (`register`), as the host does."""
    sys.path.insert(0, str(ROOT))
    from _agenda.storage.replication import litestream_binary, litestream_call
    binary, paths = litestream_binary(), [folder / "host" / name / "agenda.db" for name in names]
    config = folder / "one.yml"
    config.write_text(json.dumps({"socket": {"enabled": True, "path": str(folder / "one.sock")}, "dbs": [
        {"path": str(paths[0]), "replica": {"url": f"file://{folder}/replicas/one/{names[0]}"}}]}))
    one = subprocess.Popen([binary, "replicate", "-config", str(config)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        while not (folder / "one.sock").exists():
            time.sleep(0.1)
        for name, path in zip(names[1:], paths[1:]):
            status, answer = litestream_call(str(folder / "one.sock"), "POST", "/register", {
                "path": str(path), "replica_url": f"file://{folder}/replicas/one/{name}"})
            assert status == 200, answer
        time.sleep(seconds)
        shared = idle_figures([one.pid], seconds)
    finally:
        one.terminate()
        one.wait(60)
    if not apart:
        return shared, None
    each = []
    try:
        for name, path in zip(names, paths):
            config = folder / f"{name}.yml"
            config.write_text(json.dumps({"dbs": [{"path": str(path), "replica": {
                "url": f"file://{folder}/replicas/each/{name}"}}]}))
            each.append(subprocess.Popen([binary, "replicate", "-config", str(config)], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL))
        time.sleep(seconds)
        apart = idle_figures([process.pid for process in each], seconds)
    finally:
        for process in each:
            process.terminate()
        for process in each:
            process.wait(60)
    return shared, apart


def whole_host(folder, names, seconds):
    """A host as deployed (service, its one Litestream, leases in a folder, one sender): (RSS MB, share of a core)
    with every clinic put away, as after ten idle minutes, and then with every clinic open after one request."""
    host, port = start([sys.executable, str(ROOT / "agenda.py"), "host", "serve", str(folder / "host"), "--port", "0",
                        "--replica", str(folder / "replicas" / "host")])
    mail = subprocess.Popen([sys.executable, str(ROOT / "agenda.py"), "host", "mail", str(folder / "host"), "--smtp",
                             "smtp+plain://127.0.0.1:2525", "--mail-from", "citas@proveedor.es"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(seconds)  # the sender's first pass looks at every clinic
        put_away = idle_figures([host.pid, mail.pid], 65)  # a minute: the sender looks again at each clinic
        for name in names:
            assert get(port, name, "/custom-config") == 200
        time.sleep(seconds)
        return put_away, idle_figures([host.pid, mail.pid], 65)
    finally:
        for process in (mail, host):
            process.terminate()
        for process in (mail, host):
            process.wait(60)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clinics", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--no-runs", action="store_true", help="measure the host (or one Litestream) only, not one "
                                                                  "a clinic")
    parser.add_argument("--whole", action="store_true",
                        help="a host as deployed, every clinic put away: serve, replicate and mail, all of it")
    parser.add_argument("--litestream", action="store_true",
                        help="measure Litestream only: one for every clinic against one a clinic")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        names = clinic_folders(folder, options.clinics)
        if options.whole:
            (memory, cpu), (open_memory, open_cpu) = whole_host(folder, names, options.seconds)
            print(f"a host of {len(names)} clinics put away (serve, one Litestream, leases, one sender): {memory:.0f} MB"
                  f" RSS, {cpu:.1%} of a core")
            print(f"the same host, every clinic open after one request: {open_memory:.0f} MB RSS, {open_cpu:.1%} of a "
                  "core")
            return
        if options.litestream:
            (shared, shared_cpu), each = litestream_figures(folder, names, options.seconds, not options.no_runs)
            print(f"one Litestream for {len(names)} clinics idle: {shared:.0f} MB RSS, {shared_cpu:.1%} of a core")
            if each is None:
                return
            apart, apart_cpu = each
            print(f"{len(names)} Litestreams, one a clinic, idle: {apart:.0f} MB RSS ({apart / len(names):.1f} MB "
                  f"each), {apart_cpu:.1%} of a core")
            return
        env = {"AGENDA_MIN_NOTICE": "0"}
        (folder / "alone").mkdir()
        shutil.copytree(folder / "host" / names[0], folder / "alone" / names[0])
        host, port = start([sys.executable, str(ROOT / "agenda.py"), "host", "serve", str(folder / "alone"),
                            "--port", "0"])
        try:
            alone = drive(port, names[0], options.seconds)
            print(f"caller of one clinic at 4 connections, the host's only one: p50 {alone[0]:.1f} ms, p99 "
                  f"{alone[1]:.1f} ms")
        finally:
            host.terminate()
            host.wait(60)
        host, port = start([sys.executable, str(ROOT / "agenda.py"), "host", "serve", str(folder / "host"),
                            "--port", "0"])
        try:
            for name in names:
                assert get(port, name, "/custom-config") == 200
            memory, cpu = idle_figures([host.pid], options.seconds)
            print(f"one host, {options.clinics} clinics idle: {memory:.0f} MB RSS, {cpu:.1%} of a core")
            beside = drive(port, names[0], options.seconds)
            print(f"caller of one clinic at 4 connections beside {options.clinics - 1} idle: p50 {beside[0]:.1f} ms,"
                  f" p99 {beside[1]:.1f} ms ({beside[1] / alone[1]:.2f} of alone)")
        finally:
            host.terminate()
            host.wait(60)
        if options.no_runs:
            return
        runs = []
        try:
            for name in names:
                runs.append(start([sys.executable, str(ROOT / "agenda.py"), "run", "--db",
                                   str(folder / "host" / name / "agenda.db"), "--port", "0"],
                                  {**env, "AGENDA_SECRET": SECRET})[0])
            memory, cpu = idle_figures([run.pid for run in runs], options.seconds)
            print(f"{len(runs)} agenda run processes idle: {memory:.0f} MB RSS ({memory / len(runs):.1f} MB each),"
                  f" {cpu:.1%} of a core")
        finally:
            for run in runs:
                run.terminate()
            for run in runs:
                run.wait(60)


if __name__ == "__main__":
    main()
