"""A catalog written as before visit types behaves as before (docs/design.md, "Visit types"): a frozen copy of
the demo catalog, a frozen clock and the caller's answers captured on the commit before types existed
(tests/data/answers_before_types.json) are compared request by request; the one change allowed is a booking
or a move that clashes with the same patient's other visit ("One patient, one place")."""

import json
from pathlib import Path

DATA = Path(__file__).parent / "data"
CATALOG = (DATA / "demo_catalog_before_types.csv").read_text(encoding="utf-8")
ANSWERS = DATA / "answers_before_types.json"

# (name, method, path, body): "{name}" in a path or a body is the id an earlier step's answer gave.
STEPS = [
    ("config", "GET", "/custom-config", None),
    ("mg", "GET", "/availabilities?specialityId=MG", None),
    ("fis", "GET", "/availabilities?specialityId=FIS&startDate=23/11/2026&endDate=04/12/2026", None),
    ("ruiz", "GET", "/availabilities?doctorId=RUIZ&insuranceId=SANITAS&date=24/11/2026", None),
    ("der", "GET", "/availabilities?specialityId=DER&centerId=NORTE&startDate=01/12/2026&endDate=10/12/2026", None),
    ("ana", "POST", "/patients", {"name": "Ana", "surname": "García", "nif": "12345678Z", "phone": "612345678",
                                  "birthDate": "01/02/1980"}),
    ("luis", "POST", "/patients", {"name": "Luis", "surname": "Pérez", "nif": "00000001R", "phone": "622000111"}),
    ("ana_martin", "POST", "/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN",
                                             "patientId": "{ana}", "reason": "Revisión"}),
    ("ana_munoz", "POST", "/appointments", {"date": "25/11/2026", "time": "08:45", "doctorId": "MUNOZ",
                                            "patientId": "{ana}", "specialityId": "FIS"}),
    ("luis_ruiz", "POST", "/appointments", {"date": "24/11/2026", "time": "10:00", "doctorId": "RUIZ",
                                            "patientId": "{luis}", "insuranceId": "SANITAS"}),
    ("luis_herrera", "POST", "/appointments", {"date": "24/11/2026", "time": "15:00", "doctorId": "HERRERA",
                                               "patientId": "{luis}", "centerId": "NORTE"}),
    ("ana_clash", "POST", "/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "RUIZ",
                                            "patientId": "{ana}", "insuranceId": "PRIVADO"}),
    ("undo_clash", "DELETE", "/appointments/{ana_clash}", None),
    ("martin_day", "GET", "/availabilities?doctorId=MARTIN&date=24/11/2026", None),
    ("again", "POST", "/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN",
                                        "patientId": "{ana}", "reason": "Revisión"}),
    ("taken", "POST", "/appointments", {"date": "24/11/2026", "time": "09:00", "doctorId": "MARTIN",
                                        "patientId": "{luis}"}),
    ("off_grid", "POST", "/appointments", {"date": "24/11/2026", "time": "09:05", "doctorId": "MARTIN",
                                           "patientId": "{luis}"}),
    ("holiday", "POST", "/appointments", {"date": "08/12/2026", "time": "09:00", "doctorId": "MARTIN",
                                          "patientId": "{luis}"}),
    ("move", "PUT", "/appointments/{ana_martin}", {"newDate": "24/11/2026", "newTime": "09:30"}),
    ("move_ruiz", "PUT", "/appointments/{luis_ruiz}", {"newDate": "24/11/2026", "newTime": "09:20"}),
    ("day", "GET", "/appointments?date=24/11/2026", None),
    ("range", "GET", "/appointments/range?dates=24/11/2026,25/11/2026", None),
    ("search", "GET", "/appointments?nif=12345678Z", None),
    ("one", "GET", "/appointments/{ana_munoz}", None),
    ("patient", "GET", "/patients?nif=00000001R", None),
    ("confirm", "POST", "/appointments/confirm", {"appointmentId": "{luis_herrera}", "confirmed": True}),
    ("cancel", "DELETE", "/appointments/{ana_munoz}", None),
    ("fis_after", "GET", "/availabilities?doctorId=MUNOZ&date=25/11/2026", None),
    ("close", "POST", "/appointments/end-of-reminder-day", {"date": "24/11/2026", "voiceAgentConfigId": "v1"}),
    ("day_after", "GET", "/appointments?date=24/11/2026", None),
]
CLASHES = {"ana_clash": (409, "patient_elsewhere"), "undo_clash": (404, None)}  # booked over her own other
# visit: refused now, so there is nothing to cancel after it


def filled(template, ids):
    text = json.dumps(template)
    for name, value in ids.items():
        text = text.replace("{" + name + "}", value)
    return json.loads(text)


def answers(api):
    """[{step, status, answer}] of the steps, in order, on the demo catalog at the frozen clock."""
    found, ids = [], {}
    for name, method, path, body in STEPS:
        answer = api.call(method, filled(path, ids), filled(body, ids) if body is not None else None)
        payload = answer.json if answer.body else None
        if isinstance(payload, dict) and ("patientId" in payload or "appointmentId" in payload):
            ids[name] = payload.get("appointmentId") or payload.get("patientId")
        found.append({"step": name, "status": answer.status_int, "answer": payload})
    return found


def test_a_catalog_without_types_answers_the_caller_as_before(make_api):
    before = json.loads(ANSWERS.read_text(encoding="utf-8"))
    now = answers(make_api(CATALOG))
    assert [step["step"] for step in now] == [step["step"] for step in before]
    for old, new in zip(before, now):
        if old["step"] in CLASHES:
            assert (new["status"], new["answer"]["error"].get("reason")) == CLASHES[old["step"]], new
            continue
        assert new == old, old["step"]
