"""AGENDA_NO_SKIP=1 (CI sets it): a test skipped for a missing tool fails the run.

A pytest plugin, loaded by conftest.py. Under xdist each worker's reports, of tests and of
collection, reach the controller's hooks too, so the controller sees every skip and its
exit status is the run's.
"""

import os

_skipped = []


def pytest_runtest_logreport(report):
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_collectreport(report):
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller decides, from every worker's reports
    if os.environ.get("AGENDA_NO_SKIP") and _skipped:
        print(f"\nAGENDA_NO_SKIP is set and {len(_skipped)} test(s) were skipped: {', '.join(_skipped[:5])}")
        session.exitstatus = 1
