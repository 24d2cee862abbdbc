"""`agenda run` keeps its threads on one core unless told otherwise (docs/design.md, "One core"): a real
process on 127.0.0.1, its threads' affinity read from /proc; the option and its variable through click."""

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from click.testing import CliRunner

import agenda
from conftest import agenda_command, ROOT, send, SECRET, Server


def cores_listed(listed):
    """The set of cores of a Cpus_allowed_list ("0-3,6")."""
    return {core for part in listed.split(",") for core in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)}


def cores_of(pid):
    """{task id: the set of cores it may run on} of every thread of process `pid`, from /proc."""
    found = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        status = Path(f"/proc/{pid}/task/{task}/status").read_text()
        found[int(task)] = cores_listed(next(line.split(":", 1)[1].strip() for line in status.splitlines()
                                             if line.startswith("Cpus_allowed_list:")))
    return found


def test_run_keeps_every_thread_on_one_core(running):
    allowed = os.sched_getaffinity(0)
    server = running("--threads", "4")
    assert send(server.url, "GET", "/health")[0] == 200
    threads = cores_of(server.process.pid)
    assert len(threads) >= 5, threads  # the loop, 4 workers, the access record's writer
    if len(allowed) == 1:  # nothing to keep: the process already runs on the one core the system gives
        assert all(cores == allowed for cores in threads.values()), threads
        assert f"threads on core {min(allowed)}, the one the system gives" in server.log()
        return
    pinned = {frozenset(cores) for cores in threads.values()}
    assert len(pinned) == 1 and len(next(iter(pinned))) == 1, threads
    (core,) = next(iter(pinned))
    assert core in allowed and f"threads kept on core {core}; --cores all to use every core" in server.log()


def test_run_with_cores_all_leaves_every_core(running):
    allowed = os.sched_getaffinity(0)
    server = running("--cores", "all")
    assert send(server.url, "GET", "/health")[0] == 200
    assert set(map(frozenset, cores_of(server.process.pid).values())) == {frozenset(allowed)}
    assert "on core" not in server.log()


class Served:
    def __call__(self, app, on_listening=None, **options):
        self.options = options


def test_cores_is_one_by_default_and_all_from_the_environment(db_path):
    runner = CliRunner()
    agenda.open_database(db_path).close()
    for env, expected in (({}, "one"), ({"AGENDA_CORES": "all"}, "all")):
        served = Served()
        result = runner.invoke(agenda.cli, ["run", "--db", str(db_path)], obj={"serve": served},
                               env={"AGENDA_SECRET": SECRET, **env})
        assert result.exit_code == 0, result.output
        assert served.options["cores"] == expected
    refused = runner.invoke(agenda.cli, ["run", "--db", str(db_path), "--cores", "2"], env={"AGENDA_SECRET": SECRET})
    assert refused.exit_code == 2 and "'one'" in refused.output and "'all'" in refused.output
    assert "--cores [one|all]" in runner.invoke(agenda.cli, ["run", "-h"]).output


def test_a_process_kept_to_one_core_already_is_left_as_it_is():
    """systemd's CPUAffinity= or taskset chose the core: keep_to_one_core keeps it and names it, as current_core does."""
    core = max(os.sched_getaffinity(0))
    script = ("import os; os.sched_setaffinity(0, {%d}); from _agenda.web.serving import current_core, keep_to_one_core; "
              "print(keep_to_one_core(), sorted(os.sched_getaffinity(0)), current_core())" % core)
    shown = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == [str(core), f"[{core}]", str(core)]


def test_a_system_that_forbids_pinning_is_served_on_the_cores_given(monkeypatch, caplog):
    """A sandbox whose seccomp refuses sched_setaffinity: a warning, no traceback, every core kept."""
    from _agenda.web import serving

    def refuse(task, cores):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(serving.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(serving.os, "sched_setaffinity", refuse)
    with caplog.at_level("WARNING", logger="agenda"):
        assert serving.keep_to_one_core() is None
    assert "cannot keep the threads on one core ([Errno 1] Operation not permitted)" in caplog.text


def test_a_refusal_after_some_threads_were_kept_puts_every_thread_back_on_the_cores_given(monkeypatch, caplog):
    """The system refuses the second thread's core: no thread is left kept on one core alone (recorded, not done)."""
    from _agenda.web import serving

    waiting = threading.Event()
    helper = threading.Thread(target=waiting.wait, daemon=True)  # a second thread, whatever the process has
    helper.start()
    cores, calls = {0, 1}, []

    def set_cores(task, asked):
        if asked != cores and len(calls) == 1:
            raise PermissionError(1, "Operation not permitted")
        calls.append((task, frozenset(asked)))

    monkeypatch.setattr(serving.os, "sched_getaffinity", lambda pid: cores)
    monkeypatch.setattr(serving.os, "sched_setaffinity", set_cores)
    try:
        with caplog.at_level("WARNING", logger="agenda"):
            assert serving.keep_to_one_core() is None
    finally:
        waiting.set()
    last = dict(calls)
    assert len(calls) > 1 and set(last.values()) == {frozenset(cores)}, calls
    assert "serving on the cores given" in caplog.text


def test_litestream_restarted_while_serving_runs_on_every_core_given(tmp_path, db_path):
    """Litestream is a process of its own: kept off the service's one core when it is started again after a
    crash (its supervising thread was kept there with the others; a child takes its parent thread's cores)."""
    allowed = os.sched_getaffinity(0)
    fake = tmp_path / "litestream"
    fake.write_text("#!/bin/sh\ngrep Cpus_allowed_list: /proc/$$/status\nexit 1\n")
    fake.chmod(0o700)
    agenda.open_database(db_path).close()
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENDA_")}
    env.update(AGENDA_SECRET=SECRET, AGENDA_LITESTREAM=str(fake), PYTHONUNBUFFERED="1", TMPDIR=str(tmp_path))
    server = Server(agenda_command("run", "--db", str(db_path), "--port", "0", "--replica", str(tmp_path / "r")), env)
    try:
        deadline = time.monotonic() + 60
        while server.log().count("Cpus_allowed_list:") < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        started = re.findall(r"Cpus_allowed_list:(?:\\t|\s)+([\d,-]+)", server.log())
        assert len(started) >= 2, server.log()  # the first Litestream, and the one started again while serving
        assert [cores_listed(listed) for listed in started[:2]] == [allowed, allowed], server.log()
        assert "Traceback" not in server.log()
    finally:
        server.stop()
