"""A message to a patient, written ("What a message says"): subject, plain text, HTML and an iCalendar attachment,
in the patient's language, from what the sender read through the one door; headers no name or address can
break. Nothing clinical: never the reason, NIF, phone or a note."""

import datetime as dt
from html import escape
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime

import icalendar

from ..words.texts import translator
from ..values.fields import real_phone
from ..words.pages import desk_template, long_date, plain, visit_lines


def phone_warning(conn):
    """What `agenda seed` and `agenda run --smtp` say of the centers without a phone, or None: a patient a message
    or their link's page asks to call the clinic is given no number ("What a message says")."""
    missing = [row[0] for row in conn.execute(
        "SELECT id FROM centers WHERE coalesce(trim(phone), '') = '' ORDER BY id")]
    if not missing:
        return None
    return (f"no phone for the center{'s' if len(missing) > 1 else ''} {', '.join(missing)}: a patient the messages "
            "and their link's page ask to call the clinic is given no number; add the phone (and the address) in "
            "the catalog file's address and phone columns (docs/catalogs.md) and load it with `agenda seed FILE`")


def written(view):
    """{subject, text, html, calendar} of a message. `view`: kind, language, clinic, first_name (None for a
    guardian), patient_name (a child's, to her guardian), visit (the appointment: starts, ends, center, doctor and
    type names, id, status), series, uids ({appointment id: calendar UID}), shows, link, stop_link, first (the first
    to this patient), sequence, before (an update's: the visit's time the last message told, 'YYYY-MM-DD HH:MM')."""
    t = translator(view["language"])
    visit, kind = view["visit"], view["kind"]
    clinic = plain(view["clinic"]) or plain(visit.get("center_name")) or t("the_clinic")
    visits = view.get("series") or [visit]
    subject = t(f"mail_subject_{kind}", date=long_date(t, visit["starts"].date()), time=f"{visit['starts']:%H:%M}")
    hello = t("mail_hello", name=plain(view["first_name"])) if plain(view["first_name"]) else t("mail_hello_plain")
    whose = [(t("patient"), plain(view["patient_name"]))] if view.get("patient_name") else []
    before = []
    if view.get("before"):  # an update: what the visit was, as the last message told it
        day, _, time_text = view["before"].partition(" ")
        before = [(t("mail_before"), f"{long_date(t, dt.date.fromisoformat(day))}, {time_text}")]
    blocks = [whose + visit_lines(t, one, view["shows"], kind == "notice") + before for one in visits]
    confirmed = "_confirmed" if kind != "series" and visit.get("status") == "confirmed" else ""  # no need to ask again
    link_words = None if kind == "notice" else t("mail_series_link" if kind == "series" else f"mail_link{confirmed}")
    stop_words = t("mail_first" if view["first"] else "mail_stop")
    lead = t(f"mail_lead_{kind}{confirmed if kind == 'update' else ''}", clinic=clinic)
    phone = plain(visit.get("center_phone"))
    if kind == "notice":
        call = t("mail_notice_next", phone=t("link_phone", phone=phone) if phone else "")
    else:
        call = t("mail_call", phone=phone) if phone else None
    attached = t("mail_attached_notice" if kind == "notice" else "mail_attached")
    text = "\n".join([hello, "", lead, ""] + [
        "\n".join(f"  {label}: {value}" for label, value in block) + "\n" for block in blocks] + (
        [link_words, view["link"], ""] if link_words else []) + ([call, ""] if call else []) + [
        attached, "", clinic, "", "-- ", stop_words, view["stop_link"], ""])
    html = desk_template("mail").render(lang=view["language"] or "es", subject=subject, hello=hello, lead=lead,
                                        blocks=blocks, link_words=link_words, link=view["link"], clinic=clinic,
                                        attached=attached, stop_words=stop_words, stop=view["stop_link"],
                                        call=call and phone_link(call, phone, MAIL_TEL),
                                        button=t(f"mail_button{confirmed}"))
    return {"subject": plain(subject), "text": text, "html": html,
            "calendar": calendar(view, visits, clinic, subject)}


def written_web(view):
    """{subject, text, html, calendar: None} of the page's first message ("Patients book themselves"): confirm the
    visit by the button before `view["until"]`, or do nothing if you did not ask for it; no name, no calendar, the
    same words whoever the record is. `view`: language, clinic, visit, shows, link, until."""
    t = translator(view["language"])
    visit = view["visit"]
    clinic = plain(view["clinic"]) or plain(visit.get("center_name")) or t("the_clinic")
    subject = t("mail_subject_web", date=long_date(t, visit["starts"].date()), time=f"{visit['starts']:%H:%M}")
    hello, lead = t("mail_hello_plain"), t("mail_lead_web", clinic=clinic, until=f"{view['until']:%H:%M}")
    block, link_words, ignore = visit_lines(t, visit, view["shows"]), t("mail_link_web"), t("mail_ignore_web")
    text = "\n".join([hello, "", lead, "", "\n".join(f"  {label}: {value}" for label, value in block) + "\n",
                      link_words, view["link"], "", ignore, "", clinic, ""])
    html = desk_template("mail").render(lang=view["language"] or "es", subject=subject, hello=hello, lead=lead,
                                        blocks=[block], link_words=link_words, link=view["link"], clinic=clinic,
                                        attached=ignore, stop_words="", stop=None, call=None,
                                        button=t("mail_button_web"))
    return {"subject": plain(subject), "text": text, "html": html, "calendar": None}


MAIL_TEL = "color:#1f5f99;white-space:nowrap"  # a mail's tel: link, styled inline (the pages' is in link.css)


def phone_link(text, phone, style=None):
    """`text` as HTML with the clinic's `phone` in it a tel: link to its E.164, the number never broken across
    lines ("What a message says"); plain text when `phone` reads as no number to call."""
    shown, number = escape(text), real_phone(phone) if phone else None
    if not number:
        return shown
    styled = f' style="{style}"' if style else ""
    return shown.replace(escape(phone), f'<a href="tel:{number}"{styled}>{escape(phone)}</a>', 1)


def calendar(view, visits, clinic, subject):
    """The visit (or a series' visits) as iCalendar: a cancellation for a notice, else the visit as it is now; each
    event by its UID (`view["uids"]`), never the patient's link (a calendar syncs and shares it)."""
    cal = icalendar.Calendar()
    cal.add("prodid", "-//Agenda//patient message//ES")
    cal.add("version", "2.0")
    cal.add("method", "CANCEL" if view["kind"] == "notice" else "PUBLISH")
    for one in visits:
        event = icalendar.Event()
        event.add("uid", view["uids"][one["id"]])
        event.add("sequence", view["sequence"])
        event.add("dtstamp", view["now"])
        event.add("dtstart", one["starts"])
        event.add("dtend", one["ends"])
        event.add("summary", plain(f"{clinic} · {one['type_name']}" if view["shows"] == "doctor" and one.get(
            "type_name") else clinic))
        if one.get("center_name"):
            event.add("location", plain(one["center_name"]))
        event.add("status", "CANCELLED" if view["kind"] == "notice" else "CONFIRMED")  # no link: calendars share
        cal.add_component(event)
    cal.add_missing_timezones()
    return cal.to_ical()


def envelope(view, parts, sender, to_address, message_id):
    """The EmailMessage: From the clinic's address, To the patient's (a display name no header can be broken by),
    the Message-ID kept across tries, Auto-Submitted, and a one-click List-Unsubscribe (RFC 8058); the page's first
    message has neither a stop link nor a calendar."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = Address(display_name=plain(view["first_name"])[:64], addr_spec=to_address)  # "" for a guardian
    message["Subject"] = parts["subject"]
    message["Date"] = format_datetime(view["now"])
    message["Message-ID"] = message_id
    message["Auto-Submitted"] = "auto-generated"
    message["Content-Language"] = view["language"] or "es"
    if view.get("stop_link"):
        message["List-Unsubscribe"] = f"<{view['stop_link']}>"
        message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(parts["text"])
    message.add_alternative(parts["html"], subtype="html")
    if parts["calendar"] is not None:
        message.add_attachment(parts["calendar"], maintype="text", subtype="calendar", filename="cita.ics",
                               params={"method": "CANCEL" if view["kind"] == "notice" else "PUBLISH"})
    return message


def test_message(language, clinic, sender, to_address, message_id, now):
    """`agenda mail test`'s message: it says only that the clinic's mail reaches this address."""
    t = translator(language)
    clinic = plain(clinic) or t("the_clinic")
    message = EmailMessage()
    message["From"], message["To"] = sender, Address(addr_spec=to_address)
    message["Subject"] = t("mail_test_subject", clinic=clinic)
    message["Date"], message["Message-ID"] = format_datetime(now), message_id
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(t("mail_test_body", clinic=clinic) + "\n")
    return message
