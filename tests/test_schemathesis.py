"""Schemathesis, from PyPI, against a live `agenda run` on 127.0.0.1.

Every operation of openapi.json with valid and invalid data (the examples, coverage and
fuzzing phases), then stateful sequences that follow the document's links: create a
patient, book, move, confirm, cancel. Every request schemathesis authenticates is signed
over the exact bytes sent (tests/schemathesis_hooks.py), and the server only takes the
`request` scheme (design.md, "Signatures"), which covers method, path, query and body.

The gate (tests/schemathesis.toml): every check schemathesis has. No 5xx; no answer that
breaks the document (status, media type, headers, body schema); a request the document
allows is accepted and one it refuses is refused; a missing or wrong signature is 401; a
method a path lacks is 405 with Allow; a cancelled appointment is not read as live. The
few exceptions are written there, each with its reason, and the first test below holds
them to that. Bounded: a fixed number of examples per operation and of stateful
scenarios; the server's own access log proves at least 1,000 requests reached it. A run
still going after 10 minutes is killed: a bound against a hung run, not a measure of speed.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from conftest import ROOT, SECRET, SEEDED_AT, Server, agenda_command, seed, write_csv

# The demo clinic's ids (openapi.json's examples use them), but MARTIN works every day
# from 08:00 to 20:00 (the hooks book inside those hours); RUIZ takes only some
# insurances; a holiday closes everyone.
FUZZ_CLINIC_CSV = """\
kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to
center,CENTRO,Centro,,,,,,,,
center,NORTE,Norte,,,,,,,,
speciality,MG,Medicina general,,,,,,,,
speciality,PED,Pediatría,,,,,,,,
insurance,PRIVADO,Privado,,,,,,,,
insurance,SANITAS,Sanitas,,,,,,,,
doctor,MARTIN,Lucía Martín,MG,CENTRO,,mon-sun,08:00-20:00,15,,
doctor,RUIZ,Javier Ruiz,PED,NORTE,PRIVADO;SANITAS,mon-fri,09:00-12:00,20,,
closed,,Navidad,,,,,,,25/12/2026,
"""


class FuzzRun:
    """The server and the schemathesis run, each a child process stopped by its own id; one run a session.

    conftest.py starts it with the session, so its ~20 s overlap the rest of the suite. Under xdist
    every worker tries: the one that makes `folder` first starts the run, and when it ends writes the
    result there, where the tests below read it, on whichever worker they run.
    """

    HUNG_AFTER = 600  # seconds: a run still going is killed (a hung run, never a slow one)

    def __init__(self, folder):
        self.folder = folder
        self.server = self.fuzzer = self.waiter = None

    @property
    def result_path(self):
        return self.folder / "result.json"

    def start(self):
        """Start the run unless another process has; True when this one did."""
        try:
            self.folder.mkdir()
        except FileExistsError:
            return False
        try:
            self._start()
        except Exception as error:  # the tests read why; the rest of the suite goes on
            self._write_result(f"the run did not start: {error}", "", self.server.log() if self.server else "")
            self.stop()
            return True
        self.waiter = threading.Thread(target=self._wait_and_write, daemon=True)
        self.waiter.start()
        return True

    def _start(self):
        db_path = self.folder / "agenda.db"
        seed(db_path, write_csv(self.folder, FUZZ_CLINIC_CSV), at=SEEDED_AT)
        env = {key: value for key, value in os.environ.items() if not key.startswith(("AGENDA_", "SCHEMATHESIS_"))}
        env.update(AGENDA_SECRET=SECRET, PYTHONUNBUFFERED="1")
        self.server = Server(agenda_command("run", "--db", str(db_path), "--port", "0", "--min-notice", "0",
                                            "--signature-scheme", "request"), env)
        self.output = open(self.folder / "schemathesis.txt", "w+", encoding="utf-8")
        self.fuzzer = subprocess.Popen(
            [sys.executable, "-m", "schemathesis.cli", "--config-file", str(ROOT / "tests" / "schemathesis.toml"),
             "run", self.server.url + "/openapi.json", "--report", "junit", "--report-dir", str(self.folder / "report")],
            stdout=self.output, stderr=subprocess.STDOUT, cwd=self.folder,
            env={**env, "SCHEMATHESIS_HOOKS": "schemathesis_hooks", "PYTHONPATH": str(ROOT / "tests")})

    def _wait_and_write(self):
        try:
            code = self.fuzzer.wait(timeout=self.HUNG_AFTER)
        except subprocess.TimeoutExpired:
            code = f"killed: still running after {self.HUNG_AFTER} s"
        self.stop_processes()
        self.output.seek(0)
        self._write_result(code, self.output.read(), self.server.log())
        self.output.close()

    def _write_result(self, code, output, log):
        written = self.folder / "result.json.part"
        written.write_text(json.dumps({"code": code, "output": output, "log": log}), encoding="utf-8")
        written.rename(self.result_path)  # whole or not there: a reader never sees half of it

    def finish(self):
        """(exit code, schemathesis's report, the server's log), once the run has ended, whichever
        process runs it."""
        deadline = time.monotonic() + self.HUNG_AFTER + 60
        while not self.result_path.exists():
            if time.monotonic() >= deadline:  # a hung run is bounded, not timed: it fails as hung
                pytest.fail(f"no schemathesis result in {self.folder}: the run hung")
            time.sleep(0.2)
        result = json.loads(self.result_path.read_text(encoding="utf-8"))
        return result["code"], result["output"], result["log"]

    def stop_processes(self):
        if self.fuzzer is not None and self.fuzzer.poll() is None:
            self.fuzzer.kill()
            self.fuzzer.wait(timeout=10)
        if self.server is not None and self.server.process.poll() is None:
            self.server.terminate()
            self.server.stop()

    def stop(self):
        """At the session's end: the run this process started ends and leaves its result (tests on
        other workers may still wait for it); whatever is still running is stopped."""
        try:
            if self.waiter is not None:
                self.waiter.join(timeout=self.HUNG_AFTER + 30)
        finally:
            self.stop_processes()


@pytest.fixture
def fuzzed(schemathesis_run):
    return schemathesis_run.finish()


def test_every_check_is_on_and_the_exceptions_are_the_written_ones():
    """Every check of this schemathesis is enabled; per operation, positive_data_acceptance
    takes one more status, confirm goes without ensure_resource_availability (the hooks'
    own check stands in), and nothing else is changed (see schemathesis.toml)."""
    import schemathesis.specs.openapi.checks  # noqa: F401  (registers the OpenAPI checks)
    from schemathesis.checks import CHECKS
    from schemathesis.config import SchemathesisConfig
    from schemathesis.config._checks import POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES as DEFAULT

    project = SchemathesisConfig.from_path(ROOT / "tests" / "schemathesis.toml").projects.default
    names = set(CHECKS.get_all_names())
    assert len(names) >= 14 and {"negative_data_rejection", "ignored_auth", "use_after_free"} <= names
    assert not [name for name in names if not project.checks.get_by_name(name=name).enabled]
    added, disabled = [], []
    for operation in project.operations.operations:
        disabled += [name for name in names if operation.checks.get_by_name(name=name).enabled is False]
        statuses = operation.checks.positive_data_acceptance.expected_statuses
        assert set(DEFAULT) <= set(statuses), statuses
        added.append(sorted(set(statuses) - set(DEFAULT)))
    assert sorted(added) == [[], ["400"], ["410"]], added
    assert disabled == ["ensure_resource_availability"], disabled


def access_lines(log):
    """(method, path with ids as N, status) of every request the server answered."""
    found = re.findall(r" agenda\.access (\S+) (\S+) (\d{3}) ", log)
    return [(method, re.sub(r"/appointments/\d+", "/appointments/N", path), int(status))
            for method, path, status in found]


def test_no_5xx_and_no_answer_breaks_the_document(fuzzed):
    code, output, log = fuzzed
    assert code == 0, output
    assert "Traceback" not in log and "INTERNAL_ERROR" not in log
    assert not [line for line in access_lines(log) if line[2] >= 500]


def test_every_operation_ran_with_valid_and_invalid_data(fuzzed):
    _, output, log = fuzzed
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in output or f"✅  {phase}" in output, output
    answered = Counter((method, path) for method, path, _ in access_lines(log))
    for operation in [("GET", "/health"), ("GET", "/custom-config"), ("GET", "/patients"), ("POST", "/patients"),
                      ("GET", "/availabilities"), ("GET", "/appointments"), ("GET", "/appointments/range"),
                      ("GET", "/appointments/N"), ("POST", "/appointments"), ("PUT", "/appointments/N"),
                      ("DELETE", "/appointments/N"), ("POST", "/appointments/confirm"),
                      ("POST", "/appointments/end-of-reminder-day")]:
        assert answered[operation] >= 3, (operation, answered)
    statuses = Counter(status for _, _, status in access_lines(log))
    assert statuses[400] > 100 and statuses[415] > 0 and statuses[405] > 0  # invalid data was sent


def test_stateful_sequences_create_book_move_confirm_and_cancel(fuzzed):
    _, output, log = fuzzed
    links = re.search(r"API Links:\s+(\d+) covered", output)
    assert links and int(links[1]) >= 8, output  # sequences followed openapi.json's links
    reached = set(access_lines(log))
    for step in [("POST", "/patients", 201), ("POST", "/appointments", 201), ("PUT", "/appointments/N", 200),
                 ("POST", "/appointments/confirm", 200), ("DELETE", "/appointments/N", 204)]:
        assert step in reached, step


def test_at_least_1000_requests_reached_the_server(fuzzed):
    _, output, log = fuzzed
    assert len(access_lines(log)) >= 1000, output
