r"""The clinic at a glance on the large bench clinic (bench/README.md, "The report").

Builds the bench's large clinic with bench/generate.py (30 doctors, 60,000 patients, 300,000
appointments over two years) and times `clinic_report`, the one computation behind `agenda report`
and the admin's page, for 4, 13 and 26 weeks ending today, and the page's four SVG charts. Each is
run --repeat times after a warm-up; the report gives the median and the slowest in milliseconds.

    .venv/bin/python bench/report.py            # about 2 minutes, most of it building the clinic

In-process and bounded: no server, no network; its database is in a temporary folder.
"""

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import agenda  # noqa: E402
import generate  # noqa: E402
from _agenda.desk.charts import report_charts  # noqa: E402
from _agenda.domain.report import clinic_report  # noqa: E402
from _agenda.words.texts import translator  # noqa: E402


def timed(call, repeat):
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each (default: 5)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agenda-report-bench-") as folder:
        db = Path(folder) / "clinic.db"
        started = time.perf_counter()
        counts = generate.build(db)
        built = time.perf_counter() - started
        clinic = agenda.create_app(db, "bench-secret").clinic
        today, t = clinic.today(), translator("es")
        rows = []
        for weeks in (4, 13, 26):
            first = today - dt.timedelta(days=7 * weeks - 1)
            rows.append((f"{weeks} weeks", *timed(lambda first=first: clinic_report(clinic, first, today),
                                                  options.repeat)))
        report = clinic_report(clinic, today - dt.timedelta(days=27), today)
        rows.append(("4 charts (SVG)", *timed(lambda: report_charts(report, t), options.repeat)))
        clinic.db.close()
    print(f"The report on {counts['appointments']:,} appointments, {counts['doctors']} doctors (built in {built:.0f} s); "
          f"{options.repeat} runs each, Python {sys.version.split()[0]}")
    print(f"{'what':16} {'p50 ms':>8} {'max ms':>8}")
    for label, p50, slowest in rows:
        print(f"{label:16} {p50:8.1f} {slowest:8.1f}")


if __name__ == "__main__":
    main()
