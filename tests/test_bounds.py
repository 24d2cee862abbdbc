"""Nothing stalls the caller (docs/design.md, "Nothing stalls the caller"): every page reception or the admin
opens is bounded in the rows it reads and the bytes it writes, whatever the clinic holds. Bounds here, never
times: bench/desk_beside_caller.py measures the caller beside the heaviest of each kind."""

import datetime as dt
import re

import icalendar
import webtest

from _agenda.desk.session import MOST_COLUMNS
from _agenda.domain.feeds import FEED_MOST, new_feed
from _agenda.domain.timeline import WEEK_CARDS
from _agenda.domain.waitlist import FREE_SLOTS, NAMED_UNDER, PAGE, add_waiting, Wish

from conftest import valid_dni
from test_desk import admin_and_reception

KIB = 1024
WIDE = "kind,id,name,speciality,center,insurances,days,hours,slot_minutes,date_from,date_to\n" \
    "center,C1,Centro,,,,,,,,\nspeciality,MG,Medicina general,,,,,,,,\n" + "".join(
        f"doctor,G{n:02d},Dra. Grande {n},MG,C1,,mon-sun,08:00-15:00,15,,\n" for n in range(62))
TOMORROW = dt.date(2026, 11, 24)


def with_patients(api, count):
    """`count` patients straight into the table (a clinic's years of them); their ids."""
    conn = api.db()
    conn.executemany("INSERT INTO patients (name, surname, nif, phone, phone_e164, created_at, search) VALUES"
                     " (?, ?, ?, '600000000', '+34600000000', '2026-01-01T00:00:00Z', ?)",
                     [(f"Paciente{n}", f"Apellido{n}", valid_dni(1000 + n), f" paciente{n} apellido{n}")
                      for n in range(count)])
    conn.commit()
    return [row[0] for row in conn.execute("SELECT id FROM patients ORDER BY id")]


def a_full_day(api):
    """WIDE's 62 doctors on TOMORROW with 14 appointments each, straight into the table."""
    patients = with_patients(api, 62 * 14)
    conn = api.db()
    conn.executemany("INSERT INTO appointments (patient_id, doctor_id, speciality_id, center_id, date, time, end_time,"
                     " reason, status, created_at, updated_at) VALUES (?, ?, 'MG', 'C1', '2026-11-24', ?, ?,"
                     " 'Revisión', 'booked', '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z')",
                     [(patients[n * 14 + k], f"G{n:02d}", f"{8 + k:02d}:00", f"{8 + k:02d}:15")
                      for n in range(62) for k in range(7)] +
                     [(patients[n * 14 + 7 + k], f"G{n:02d}", f"{8 + k:02d}:30", f"{8 + k:02d}:45")
                      for n in range(62) for k in range(7)])
    conn.commit()


def test_a_center_of_62_doctors_is_drawn_whole_and_its_full_day_stays_within_512_kib(make_api):
    api = make_api(WIDE)
    a_full_day(api)
    admin, _ = admin_and_reception(api)
    page = admin.get("/desk/day?date=24/11/2026&centerId=C1")
    heads = re.findall(r'class="col-head c(\d+) r1"', page.text)
    assert len(heads) == 62 and len(page.html.select("article.card")) == 62 * 14
    css = admin.get("/desk/desk.css").text
    assert all(f".c{column}{{grid-column:{column}}}" in css for column in map(int, heads))
    assert 62 + 1 < MOST_COLUMNS + 2 and len(page.body) <= 512 * KIB


def test_a_day_of_the_center_s_week_draws_its_first_appointments_and_counts_the_rest(make_api):
    api = make_api(WIDE)
    a_full_day(api)
    admin, _ = admin_and_reception(api)
    page = admin.get("/desk/week?date=24/11/2026&centerId=C1")
    tuesday = page.html.select(".week-grid section.week-day")[1]
    drawn = [" ".join(card.a.text.split()) for card in tuesday.select("article.card")]
    assert len(drawn) == WEEK_CARDS and drawn[0] == "08:00 Paciente0 Apellido0" and drawn[-1].startswith("08:00 ")
    more = tuesday.select_one("a.more")
    assert more.text == f"+{62 * 14 - WEEK_CARDS} más: ver el día" and more["href"] == "/desk/day?date=24/11/2026&centerId=C1"
    assert "Dra. Grande 61 14 citas" in " ".join(tuesday.text.split())  # every doctor counted
    assert len(page.body) <= 512 * KIB
    read, = api.db().execute("SELECT count(DISTINCT patient_id) FROM access_reads WHERE reader = 'desk:luis'").fetchone()
    assert read == WEEK_CARDS  # only those drawn are read


def test_the_waiting_list_of_200_is_paged_and_names_only_what_it_draws(api, clock):
    patients = with_patients(api, 200)
    for patient in patients:
        add_waiting(api.app.clinic,
                    Wish(patient_id=patient, speciality_id="MG", first=TOMORROW, last=TOMORROW + dt.timedelta(days=13)),
                    source="desk:ana")
    admin, _ = admin_and_reception(api)
    page = admin.get("/desk/waitlist")
    named = re.findall(r"Paciente\d+ Apellido\d+", page.text)
    assert 0 < len(named) <= PAGE + FREE_SLOTS * NAMED_UNDER and len(page.body) <= 512 * KIB
    assert len(page.html.select("main table tbody tr")) == PAGE and "Página 1 de 4." in page.text
    assert "más esperan este hueco" in page.text
    last = admin.get("/desk/waitlist?page=3")
    assert len(last.html.select("main table tbody tr")) == 200 - 3 * PAGE and 'rel="next"' not in last.text
    conn = api.db()
    read, = conn.execute("SELECT count(DISTINCT patient_id) FROM access_reads WHERE reader = 'desk:luis'").fetchone()
    assert read <= 2 * PAGE + 2 * FREE_SLOTS * NAMED_UNDER  # only those drawn are read


def test_a_long_search_is_refused_in_the_page_s_words_and_what_was_typed_kept(api, clock):
    _, reception = admin_and_reception(api)
    csrf = re.search(r'name="csrf" value="([^"]+)"', reception.get("/desk/patients").text)[1]
    eleven = " ".join(["garcia"] * 11)
    refused = reception.post("/desk/patients", {"q": eleven, "csrf": csrf}, expect_errors=True)
    assert refused.status_int == 400 and "10 palabras y 200 caracteres" in refused.text
    assert f'value="{eleven}"' in refused.text
    many = reception.post("/desk/patients", {"q": " ".join(["x"] * 1000), "csrf": csrf}, expect_errors=True)
    assert many.status_int == 400  # a thousand words: refused, never a 500
    assert reception.post("/desk/patients", {"q": " ".join(["garcia"] * 10), "csrf": csrf}).status_int == 200


def test_a_feed_holds_a_doctors_next_appointments_up_to_its_bound(make_api):
    api = make_api(WIDE)
    patients = with_patients(api, 30)
    conn = api.db()
    days = [TOMORROW + dt.timedelta(days=n) for n in range(FEED_MOST // 28 + 2)]
    conn.executemany("INSERT INTO appointments (patient_id, doctor_id, speciality_id, center_id, date, time, end_time,"
                     " status, created_at, updated_at) VALUES (?, 'G00', 'MG', 'C1', ?, ?, ?, 'booked',"
                     " '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z')",
                     [(patients[k % 30], day.isoformat(), f"{8 + k // 4:02d}:{15 * (k % 4):02d}",
                       f"{8 + (k + 1) // 4:02d}:{15 * ((k + 1) % 4):02d}") for day in days for k in range(28)])
    conn.commit()
    token = new_feed(api.app.clinic, "G00", "cli")
    events = icalendar.Calendar.from_ical(webtest.TestApp(api.app).get(f"/feeds/{token}.ics").body).walk("VEVENT")
    assert len(events) == FEED_MOST < len(days) * 28
    assert events[0]["dtstart"].dt.date() == TOMORROW  # the soonest kept
