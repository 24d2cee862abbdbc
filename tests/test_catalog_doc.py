"""docs/catalogs.md as an admin follows it: its example file loads, and does what the doc says of it (two
physiotherapists share two boxes: a third session at the same time is not offered; a box cleaned is free)."""

import re

from conftest import ROOT

DOC = (ROOT / "docs" / "catalogs.md").read_text(encoding="utf-8")


def example():
    return re.search(r"```csv\n(.*?)```", DOC, re.S)[1]


def test_the_docs_example_loads_and_two_boxes_hold_two_sessions_at_a_time(make_api):
    api = make_api(csv=example())
    names = [s["name"] for s in api.get("/custom-config").json["specialities"]["data"]]
    assert "Sesión de fisioterapia (Fisioterapia, 45 min)" in names
    def starts(doctor):
        answer = api.get(f"/availabilities?doctorId={doctor}&date=24/11/2026&specialityId=FIS-SESION")
        return [slot["time"] for slot in answer.json["data"]]
    assert starts("MUNOZ")[:2] == ["08:00", "08:15"]
    first, second, third = (api.new_patient(nif=nif, phone=phone) for nif, phone in (
        ("12345678Z", "612345678"), ("00000001R", "612345679"), ("00000002W", "612345670")))
    for patient, doctor in ((first, "MUNOZ"), (second, "LOPEZ")):
        api.book(patient, date="24/11/2026", time="08:00", doctor=doctor, specialityId="FIS-SESION")
    assert "08:00" not in starts("MUNOZ") and "08:45" not in starts("MUNOZ")  # both boxes busy, cleaning too
    assert "09:00" in starts("MUNOZ")  # cleaned by 09:00
    refused = api.book(third, date="24/11/2026", time="08:15", doctor="MUNOZ", specialityId="FIS-SESION", status=409)
    assert refused.json["error"]["reason"] in ("taken", "resource_taken")


def test_every_column_the_doc_names_is_one_the_loader_reads():
    from _agenda.files.catalogs import CATALOG_COLUMNS
    header = re.search(r"The columns: `([^`]+)`", DOC)[1]
    assert tuple(header.split(",")) == CATALOG_COLUMNS == tuple(example().splitlines()[0].split(","))
