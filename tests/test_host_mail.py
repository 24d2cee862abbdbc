"""One sender for a host's clinics (docs/design.md, "A host of clinics"): every clinic's messages go, each once,
From the host's address under the clinic's name and with links to the clinic's own address; a clinic another sender
holds, or one whose settings are wrong, waits alone."""

import os

import pytest
from click.testing import CliRunner

import agenda
from _agenda.patient.host_sender import host_clinics, HostSender
from _agenda.patient.sender import Mailer, sender_lock, smtp_server
from _agenda.web.host import Clinics
from _agenda.cli.host import close_clinic, open_clinic

from test_mail import mail_server  # noqa: F401 (the fixture)
from conftest import SEEDED_AT
from test_host import A, B, ask, make_clinic, Moment

HOST_FROM = "Proveedor <citas@proveedor.es>"


@pytest.fixture
def host(tmp_path):
    """A host's folder of two clinics, A named and B at an address of its own, each with a booking whose
    confirmation waits in its outbox."""
    folder = tmp_path / "clinics"
    folder.mkdir()
    make_clinic(folder, A, tmp_path, 'min_notice_minutes = 0\nclinic_name = "Clínica A"\n')
    make_clinic(folder, B, tmp_path, 'min_notice_minutes = 0\npublic_url = "https://agenda.clinica-b.es"\n')
    clinics = Clinics(folder, open_clinic, close_clinic)
    clinics.look(force=True)
    for name, address in ((A, "ana@example.es"), (B, "bea@example.es")):
        patient = ask(clinics, name, "POST", "/patients", {"name": "Luis", "nif": "11111111H", "email": address})
        day = ask(clinics, name, "GET", "/availabilities?doctorId=MARTIN").json["data"][0]
        booked = ask(clinics, name, "POST", "/appointments", {"date": day["date"], "time": day["time"],
                                                             "doctorId": "MARTIN", "patientId": patient.json["patientId"]})
        assert booked.status_int == 201, booked.text
    clinics.close_all()
    return folder


def send_once(folder, mail_server):
    result = CliRunner().invoke(agenda.cli, ["host", "mail", str(folder), "--once", "--smtp", mail_server.url,
                                             "--smtp-ca", str(mail_server.ca_file), "--mail-from", HOST_FROM])
    assert result.exit_code == 0, result.output
    return result.output


def received(mail_server):
    return {to[0]: message for to, message in mail_server.inbox.messages()}


def test_one_sender_sends_every_clinics_messages_once_each_in_its_own_name_and_address(host, mail_server):
    assert "2 sent" in send_once(host, mail_server)
    got = received(mail_server)
    assert set(got) == {"ana@example.es", "bea@example.es"}
    assert got["ana@example.es"]["From"] == "Clínica A <citas@proveedor.es>"
    assert got["bea@example.es"]["From"] == HOST_FROM
    assert f"https://{A}/cita/" in got["ana@example.es"].get_body(("plain",)).get_content()
    assert "https://agenda.clinica-b.es/cita/" in got["bea@example.es"].get_body(("plain",)).get_content()
    assert send_once(host, mail_server) == "nothing to send\n"
    assert len(mail_server.inbox.messages()) == 2


def test_a_clinic_another_sender_holds_or_whose_settings_are_wrong_waits_alone(host, mail_server):
    held = sender_lock(host / B / "agenda.db")
    try:
        assert "1 busy" in send_once(host, mail_server)
        assert set(received(mail_server)) == {"ana@example.es"}
    finally:
        os.close(held)
    (host / B / "agenda.toml").write_text("min_notice_minute = 0\n")  # a key mistyped
    assert send_once(host, mail_server) == "nothing to send\n"
    (host / B / "agenda.toml").write_text("min_notice_minutes = 0\n")
    assert "1 sent" in send_once(host, mail_server)
    assert set(received(mail_server)) == {"ana@example.es", "bea@example.es"}


def test_a_prefix_clinics_mail_waits_for_its_public_url_and_then_goes_with_links_under_its_prefix(host, mail_server,
                                                                                                  tmp_path):
    (host / A).rename(host / "clinica-a")
    (host / "clinica-a" / "agenda.toml").write_text('min_notice_minutes = 0\nclinic_name = "Clínica A"\n')
    assert "1 sent" in send_once(host, mail_server)  # B's only
    (host / "clinica-a" / "agenda.toml").write_text('public_url = "https://agenda.proveedor.es/clinica-a"\n')
    assert "1 sent" in send_once(host, mail_server)
    body = received(mail_server)["ana@example.es"].get_body(("plain",)).get_content()
    assert "https://agenda.proveedor.es/clinica-a/cita/" in body


def test_a_clinics_message_waits_while_its_replica_has_not_confirmed_its_change_and_the_others_go(host, mail_server):
    """While the host replicates a clinic, its messages go only once its replica holds the changes they tell of, as
    beside `agenda run --smtp`; a clinic not replicated, or confirmed, sends at once."""
    confirmed = []
    sender = HostSender(lambda: host_clinics(host, set()), Mailer(smtp_server(mail_server.url,
                                                                              ca_file=str(mail_server.ca_file))),
                        HOST_FROM, lambda: SEEDED_AT, clock=Moment(),
                        sync_for=lambda db_path: (lambda: bool(confirmed)) if db_path.parent.name == A else None)
    assert sender.pass_once() == {"sent": 1, "waiting for the replica": 1}
    assert set(received(mail_server)) == {"bea@example.es"}
    confirmed.append(True)
    sender.clock.now += 61  # the sender looks again at a clinic whose files did not change
    assert sender.pass_once() == {"sent": 1}
    assert set(received(mail_server)) == {"ana@example.es", "bea@example.es"}


def test_a_clinic_whose_pass_fails_is_said_once_and_the_others_go(host, mail_server, caplog):
    """A clinic that cannot be opened (here a file that is no database) fails its pass each minute, named in the log
    once until its fault changes or mends; the other clinics' messages go."""
    (host / B / "agenda.db").write_bytes(b"not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (host / B / f"agenda.db{suffix}").unlink(missing_ok=True)
    sender = HostSender(lambda: host_clinics(host, set()), Mailer(smtp_server(mail_server.url,
                                                                              ca_file=str(mail_server.ca_file))),
                        HOST_FROM, lambda: SEEDED_AT, clock=Moment())
    with caplog.at_level("ERROR", logger="agenda"):
        assert sender.pass_once() == {"sent": 1, "clinic failed": 1}
        sender.clock.now += 61
        assert sender.pass_once() == {"clinic failed": 1}
    assert [record.getMessage() for record in caplog.records].count(f"mail for {B}: the pass failed; it is tried "
                                                                      "again each minute") == 1
    assert set(received(mail_server)) == {"ana@example.es"}
