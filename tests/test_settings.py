"""The clinic's settings are one list (docs/design.md, "Configuration and CLI"): every field of `Settings` has its
help, its option on `agenda run`, its variable and its key in a clinic's file, and is reachable by each; an option
wins over the clinic's file, the file over the environment, the environment over the default; a wrong key, value or
variable is refused at start naming where it sits and the fix; `agenda run` and `agenda host` read a clinic folder
alike."""

import dataclasses
import json
import os

import pytest
from click.testing import CliRunner
from hypothesis import given, HealthCheck, settings as hypothesis_settings, strategies as st

import agenda
from _agenda.cli.host import close_clinic, open_clinic
from _agenda.cli.service import sender_settings
from _agenda.values.settings import listed, SETTINGS, settings_given, settings_in_file, variable

from conftest import migrated, ROOT, SECRET
from test_architecture import section

Settings = agenda.Settings
DESIGN = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
# The variables admins set before the list drove them: each must keep its name.
VARIABLES_BEFORE = {"AGENDA_TZ", "AGENDA_SIGNATURE_SCHEME", "AGENDA_MIN_NOTICE", "AGENDA_HORIZON",
                    "AGENDA_REMINDER_POLICY", "AGENDA_RETENTION_YEARS", "AGENDA_DESK_MIN_NOTICE", "AGENDA_DESK_HORIZON",
                    "AGENDA_CLINIC_NAME", "AGENDA_FEED_SHOWS", "AGENDA_ARRIVAL_WINDOW", "AGENDA_DESK_NETWORK",
                    "AGENDA_MAIL_SHOWS", "AGENDA_CANCEL_NOTICE", "AGENDA_REMINDER_HOURS", "AGENDA_PUBLIC_URL"}


def toml(values):
    """A clinic's settings file giving `values`."""
    return "".join(f"{name} = {json.dumps(value, ensure_ascii=False)}\n" for name, value in values.items())


def another(field):
    """A value the setting may take other than its default."""
    meta = field.metadata
    if meta["choices"]:
        return meta["choices"][-1]
    if field.type is int:
        high = meta["within"][1]
        return field.default + 1 if high is None or field.default < high else field.default - 1
    return meta["example"]


def values(field):
    """Every value the setting may take (a few, for a text)."""
    meta = field.metadata
    if meta["choices"]:
        return st.sampled_from(meta["choices"])
    if field.type is int:
        low, high = meta["within"]
        return st.integers(low, low + 10_000 if high is None else high)
    return st.sampled_from([meta["example"], *[field.default] * bool(field.default)])


def run_settings(args=(), env=None):
    """(the result of `agenda run ARGS` in ENV, the Settings it served with or None)."""
    served = []
    result = CliRunner().invoke(agenda.cli, ["run", *args], env={"AGENDA_SECRET": SECRET, **(env or {})},
                                obj={"serve": lambda app, **options: served.append(app.clinic.settings)})
    return result, (served[0] if served else None)


def clinic_folder(host, name, settings):
    """A clinic folder under `host`: an empty clinic, its secret (0600) and its settings file."""
    folder = host / name
    folder.mkdir(parents=True)
    migrated(folder / "agenda.db")
    descriptor = os.open(folder / "agenda.secret", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(descriptor, SECRET.encode())
    os.close(descriptor)
    (folder / "agenda.toml").write_text(settings, encoding="utf-8")
    return folder


def test_every_setting_has_its_help_option_variable_file_key_and_its_name_in_the_design(tmp_path):
    options = {param.name: param for param in agenda.cli.commands["run"].params}
    listing = section(DESIGN, "Configuration and CLI")
    for name, field in SETTINGS.items():
        option = options[name]
        assert field.metadata["help"].strip() and option.help.startswith(field.metadata["help"]), name
        assert (option.opts, option.envvar, option.default) == ([field.metadata["option"]], variable(field),
                                                                field.default)
        assert f"`{name}`" in listing, f"docs/design.md, 'Configuration and CLI', does not list {name}"
        assert another(field) != field.default, f"{name}: a free text needs its example"
    assert len({variable(field) for field in SETTINGS.values()}) == len(SETTINGS)
    assert VARIABLES_BEFORE <= {variable(field) for field in SETTINGS.values()}
    (tmp_path / "agenda.toml").write_text(toml(dataclasses.asdict(Settings())), encoding="utf-8")
    assert settings_in_file(tmp_path / "agenda.toml") == dataclasses.asdict(Settings())


def test_a_field_declared_without_its_entry_in_the_list_stops_the_import():
    @dataclasses.dataclass(frozen=True)
    class Plain:
        horizon_days: int = 90

    with pytest.raises(TypeError, match="Settings.horizon_days has no option, help or check"):
        listed(Plain)


def test_run_help_shows_every_setting_with_its_help_default_variable_and_an_example():
    result = CliRunner().invoke(agenda.cli, ["run", "-h"])
    said = " ".join(result.output.split())
    for name, field in SETTINGS.items():
        assert field.metadata["option"] in said and f"[file key: {name}]" in said
        default = f"; default: {field.default}" if field.default != "" else ""
        assert f"env var: {variable(field)}{default}" in said, name
    assert "Example:" in result.output and "--settings" in said


@pytest.mark.parametrize("route", ["option", "file", "environment"])
def test_every_setting_is_reachable_by_each_route(route, db_path):
    migrated(db_path)
    wanted = {name: another(field) for name, field in SETTINGS.items()}
    wanted["web_booking"] = "off"  # on, it needs a mail relay: the test below reaches it by each route
    args = [word for name, value in wanted.items() for word in (SETTINGS[name].metadata["option"], str(value))]
    env = {variable(SETTINGS[name]): str(value) for name, value in wanted.items()}
    if route == "file":
        db_path.with_suffix(".toml").write_text(toml(wanted), encoding="utf-8")
    result, served = run_settings(["--db", str(db_path), *(args if route == "option" else [])],
                                  env if route == "environment" else {})
    assert result.exit_code == 0, result.output
    assert served == Settings(**wanted)


@pytest.mark.parametrize("route", ["option", "file", "environment"])
def test_the_web_booking_is_reachable_by_each_route_and_refused_at_start_without_what_it_needs(route, db_path):
    migrated(db_path)
    wanted = {"web_booking": "on", "public_url": "https://citas.clinicasol.es"}
    args = [word for name, value in wanted.items() for word in (SETTINGS[name].metadata["option"], value)]
    env = {variable(SETTINGS[name]): value for name, value in wanted.items()}
    if route == "file":
        db_path.with_suffix(".toml").write_text(toml(wanted), encoding="utf-8")
    result, served = run_settings(["--db", str(db_path), *(args if route == "option" else [])],
                                  env if route == "environment" else {})
    assert result.exit_code == 1 and served is None
    assert "the web booking needs the clinic's privacy information: give it with --web-privacy" in result.output
    result, served = run_settings(["--db", str(db_path), "--web-privacy", "Clínica Sol trata sus datos.",
                                   *(args if route == "option" else [])], env if route == "environment" else {})
    assert result.exit_code == 1 and served is None
    assert "give the clinic's mail relay with --smtp" in " ".join(result.output.split())


def test_an_option_wins_over_the_clinic_s_file_which_wins_over_the_environment_which_wins_over_the_default(db_path):
    migrated(db_path)
    db_path.with_suffix(".toml").write_text(toml({"min_notice_minutes": 20, "horizon_days": 40}), encoding="utf-8")
    result, served = run_settings(["--db", str(db_path), "--min-notice", "5"],
                                  {"AGENDA_MIN_NOTICE": "10", "AGENDA_HORIZON": "30", "AGENDA_CLINIC_NAME": "Sol"})
    assert result.exit_code == 0, result.output
    assert (served.min_notice_minutes, served.horizon_days, served.clinic_name, served.desk_horizon_months) == \
        (5, 40, "Sol", Settings().desk_horizon_months)
    named = db_path.with_name("elsewhere.toml")
    named.write_text("horizon_days = 50\n", encoding="utf-8")
    result, served = run_settings(["--db", str(db_path)], {"AGENDA_SETTINGS": str(named)})
    assert (served.min_notice_minutes, served.horizon_days) == (Settings().min_notice_minutes, 50)


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.fixed_dictionaries({name: st.tuples(*[st.none() | values(field)] * 3) for name, field in SETTINGS.items()}))
def test_the_strongest_route_giving_a_setting_decides_it(tmp_path, routes):
    """routes: for each setting, what the option, the file and the environment give (None: nothing)."""
    path = tmp_path / "agenda.toml"
    path.write_text(toml({name: given[1] for name, given in routes.items() if given[1] is not None}), encoding="utf-8")
    environ = {variable(SETTINGS[name]): str(given[2]) for name, given in routes.items() if given[2] is not None}
    options = {name: given[0] for name, given in routes.items() if given[0] is not None}
    expected = {name: next(value for value in given if value is not None)
                for name, given in routes.items() if given != (None, None, None)}
    assert Settings(**settings_given(path, environ, options)) == Settings(**expected)


REFUSALS = [
    ({"agenda.toml": "min_notice = 0\n"}, {}, [],
     ["agenda.toml: unknown setting 'min_notice'; the settings are: tz,", "did you mean min_notice_minutes?"]),
    ({"agenda.toml": "horizon_days = 0\n"}, {}, [],
     ["agenda.toml: horizon_days = 0: booking horizon must be at least"]),
    ({"agenda.toml": 'cancel_notice_hours = "24"\n'}, {}, [],
     ["agenda.toml: cancel_notice_hours must be a whole number, not '24'"]),
    ({"agenda.toml": "horizon_days = 40\n"}, {"AGENDA_HORIZON": "noventa"}, [],
     ["AGENDA_HORIZON='noventa': give a whole number, e.g. AGENDA_HORIZON=90"]),
    ({}, {"AGENDA_FEED_SHOWS": "all"}, [], ["AGENDA_FEED_SHOWS='all': a feed shows one of time, names, reasons"]),
    ({}, {"AGENDA_CANCEL_NOTICE": "1000"}, [],
     ["AGENDA_CANCEL_NOTICE='1000': the cancellation notice must be 0 to 720"]),
    ({}, {"AGENDA_TZ": "Mars/Base"}, ["--tz", "Europe/Madrid"], ["AGENDA_TZ='Mars/Base': unknown time zone"]),
    ({}, {}, ["--settings", "nowhere.toml"], ["nowhere.toml: no such settings file", "--settings"]),
    ({}, {}, ["--desk-network", "192.168.1.0/33"], ["--desk-network '192.168.1.0/33': '192.168.1.0/33' is not an"]),
]


@pytest.mark.parametrize("files, env, args, said", REFUSALS, ids=["unknown key", "wrong value in the file",
                         "wrong type in the file", "wrong number in a variable", "wrong choice in a variable",
                         "out of range in a variable", "a variable under an option", "no such file",
                         "wrong option"])
def test_a_wrong_key_value_or_variable_is_refused_at_start_naming_where_it_sits(db_path, files, env, args, said):
    migrated(db_path)
    for name, text in files.items():
        (db_path.parent / name).write_text(text, encoding="utf-8")
    result, served = run_settings(["--db", str(db_path), *args], env)
    assert result.exit_code == 1 and served is None, result.output
    for words in said:
        assert words in " ".join(result.output.split())


def test_agenda_host_refuses_a_clinic_whose_web_booking_lacks_what_it_needs(tmp_path):
    folder = clinic_folder(tmp_path, "citas.clinicasol.es", 'web_booking = "on"\n')
    with pytest.raises(ValueError, match="give it with --web-privacy"):
        open_clinic(folder)


def test_agenda_run_and_agenda_host_serve_a_clinic_folder_with_the_same_settings(tmp_path, monkeypatch):
    folder = clinic_folder(tmp_path, "citas.clinicasol.es", 'clinic_name = "Clínica Sol"\nhorizon_days = 30\n')
    monkeypatch.setenv("AGENDA_HORIZON", "60")
    monkeypatch.setenv("AGENDA_FEED_SHOWS", "names")
    app = open_clinic(folder)
    try:
        hosted = app.clinic.settings
    finally:
        close_clinic(app)
    served = []
    result = CliRunner().invoke(agenda.cli, ["run", "--db", str(folder / "agenda.db")],
                                obj={"serve": lambda app, **options: served.append(app.clinic.settings)})
    assert result.exit_code == 0, result.output
    assert served == [hosted] and (hosted.clinic_name, hosted.horizon_days, hosted.feed_shows) == \
        ("Clínica Sol", 30, "names")


def test_the_sender_beside_the_service_gets_the_clinic_s_settings_whichever_way_they_came(db_path):
    chosen = Settings(tz="Atlantic/Canary", clinic_name="Clínica Sol", mail_shows="doctor", reminder_hours=24,
                      public_url="https://citas.clinicasol.es")
    env = sender_settings(db_path, chosen, "smtp+plain://localhost:25", None, None, "Sol <citas@clinicasol.es>")
    assert {name: env[variable(SETTINGS[name])] for name in ("tz", "clinic_name", "mail_shows", "reminder_hours",
                                                             "public_url")} == \
        {"tz": "Atlantic/Canary", "clinic_name": "Clínica Sol", "mail_shows": "doctor", "reminder_hours": "24",
         "public_url": "https://citas.clinicasol.es"}


def test_the_host_s_nginx_sites_and_status_read_each_clinic_s_settings_as_it_is_served(tmp_path):
    host, sites, live = tmp_path / "clinics", tmp_path / "sites", tmp_path / "live"
    for name, settings in (("citas.a.es", ""), ("citas.b.es", 'desk_network = "198.51.100.0/24"\n')):
        clinic_folder(host, name, settings)
        (live / name).mkdir(parents=True)
        (live / name / "fullchain.pem").write_text("")
    env = {"AGENDA_DESK_NETWORK": "192.0.2.0/24"}
    written = CliRunner().invoke(agenda.cli, ["host", "nginx", str(host), str(sites), "--certificates", str(live),
                                              "--logs", str(tmp_path)], env=env)
    assert written.exit_code == 0 and "closed to every address" not in written.output, written.output
    conf = (sites / "agenda-host.conf").read_text()
    assert (conf.count("allow 192.0.2.0/24;"), conf.count("allow 198.51.100.0/24;")) == (2, 2)
    status = CliRunner().invoke(agenda.cli, ["host", "status", str(host)], env={"AGENDA_HORIZON": "0"})
    assert status.exit_code == 1 and status.output.count("a wrong setting: AGENDA_HORIZON='0'") == 2, status.output
