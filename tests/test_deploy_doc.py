"""docs/deploy.md as an admin follows it, top to bottom: its systemd units, the order of the
nginx and certbot steps, the systems and Python it names, the upgrade's order.

tests/test_cli.py checks that every `agenda` command line in it parses; these check the rest.
Two tests hand the doc's files to the real tools (`systemd-analyze verify`, `nginx -t`) and
are skipped where a tool is missing (which CI's AGENDA_NO_SKIP turns into a failure).
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import webtest

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "deploy.md"
DOC = DOC_PATH.read_text(encoding="utf-8")
UNIT_DIR = "/etc/systemd/system/"
UNIT_SECTIONS = {"Unit", "Service", "Timer", "Install"}

# The keys each section may hold: the ones systemd documents that a recipe here could use
# (systemd.unit, systemd.service, systemd.exec, systemd.kill, systemd.timer), so a typo fails.
KNOWN_KEYS = {
    "Unit": {"Description", "Documentation", "After", "Before", "Wants", "Requires", "BindsTo", "PartOf",
             "OnFailure", "OnSuccess", "StartLimitIntervalSec", "StartLimitBurst", "ConditionPathExists",
             "JoinsNamespaceOf"},
    "Service": {"Type", "User", "Group", "Environment", "EnvironmentFile", "ExecStart", "ExecStartPre",
                "ExecStartPost", "ExecStop", "ExecReload", "KillSignal", "KillMode", "TimeoutStopSec",
                "TimeoutStartSec", "Restart", "RestartSec", "UMask", "WorkingDirectory", "NoNewPrivileges",
                "PrivateTmp", "PrivateDevices", "ProtectHome", "ProtectSystem", "ReadWritePaths",
                "ReadOnlyPaths", "SyslogIdentifier", "StandardOutput", "StandardError", "Nice", "IOSchedulingClass"},
    "Timer": {"OnCalendar", "OnBootSec", "OnStartupSec", "OnActiveSec", "OnUnitActiveSec", "OnUnitInactiveSec",
              "Persistent", "RandomizedDelaySec", "AccuracySec", "Unit", "WakeSystem"},
    "Install": {"WantedBy", "RequiredBy", "Alias", "Also"},
}


def fenced_blocks(text=DOC):
    """(language, body, text between the previous block and this one) for each fenced block."""
    blocks, last_end = [], 0
    for match in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        blocks.append((match[1], match[2], text[last_end:match.start()]))
        last_end = match.end()
    return blocks


def parse_unit(body):
    """{section: [(key, value), ...]} of an INI-like systemd file; raises on a line that is neither."""
    sections, current = {}, None
    for number, line in enumerate(body.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        header = re.fullmatch(r"\[(\w+)\]", line)
        if header:
            current = sections.setdefault(header[1], [])
            continue
        pair = re.fullmatch(r"([A-Za-z]+)=(.*)", line)
        assert pair and current is not None, f"line {number} is neither a [Section] nor Key=value: {line!r}"
        current.append((pair[1], pair[2]))
    return sections


def unit_files():
    """{file name: (sections, body)} of every systemd unit in a fenced block. A unit's file is
    named by a `# /etc/systemd/system/NAME` comment on its first line, else by the last such
    path the text before the block names."""
    units = {}
    for _, body, before in fenced_blocks():
        sections = parse_unit(body) if re.search(r"^\[(Unit|Service|Timer)\]$", body, re.MULTILINE) else None
        if sections is None:
            continue
        first = re.match(r"#\s*" + re.escape(UNIT_DIR) + r"(\S+)", body)
        named = re.findall(re.escape(UNIT_DIR) + r"([\w@.-]+\.(?:service|timer))", before)
        name = first[1] if first else (named[-1] if named else None)
        assert name, f"no /etc/systemd/system/ file name before or in the unit:\n{body}"
        assert name not in units, f"{name} is defined twice"
        units[name] = (sections, body)
    return units


UNITS = unit_files()


def values(sections, section, key):
    return [value for name, value in sections.get(section, []) if name == key]


def test_the_doc_defines_the_service_its_health_and_backup_units_and_their_timers():
    assert {"agenda.service", "agenda-health.service", "agenda-health.timer", "agenda-backup.service",
            "agenda-backup.timer", "agenda-alert@.service"} <= set(UNITS)


@pytest.mark.parametrize("name", sorted(UNITS))
def test_every_unit_has_the_sections_and_keys_systemd_expects(name):
    sections, _ = UNITS[name]
    assert set(sections) <= UNIT_SECTIONS, f"{name}: unknown sections {set(sections) - UNIT_SECTIONS}"
    for section, pairs in sections.items():
        unknown = {key for key, _ in pairs} - KNOWN_KEYS[section]
        assert not unknown, f"{name} [{section}]: keys systemd does not know here: {unknown}"
    if name.endswith(".timer"):
        assert "Service" not in sections
        triggers = {"OnCalendar", "OnBootSec", "OnStartupSec", "OnActiveSec", "OnUnitActiveSec", "OnUnitInactiveSec"}
        assert {key for key, _ in sections.get("Timer", [])} & triggers, f"{name}: a [Timer] with no trigger"
        assert values(sections, "Install", "WantedBy") == ["timers.target"], f"{name}: not enabled by timers.target"
        return
    assert name.endswith(".service") and "Timer" not in sections
    assert values(sections, "Unit", "Description"), f"{name}: no Description"
    commands = values(sections, "Service", "ExecStart")
    assert commands, f"{name}: no ExecStart"
    for key in ("ExecStart", "ExecStartPre", "ExecStartPost"):
        for command in values(sections, "Service", key):
            program = command.lstrip("@-:+!").split()[0]
            assert program.startswith("/"), f"{name}: {key} must name an absolute path, not {program!r}"
    kind = values(sections, "Service", "Type") or ["simple"]
    if kind == ["oneshot"]:
        # started by a timer or by OnFailure, never at boot on its own
        assert "Install" not in sections, f"{name}: a oneshot run by a timer needs no [Install]"
    else:
        assert len(commands) == 1, f"{name}: only a oneshot may have several ExecStart lines"
        assert values(sections, "Install", "WantedBy") == ["multi-user.target"], f"{name}: not started at boot"


@pytest.mark.parametrize("name", sorted(n for n in UNITS if n.endswith(".timer")))
def test_every_timer_starts_a_service_the_doc_defines(name):
    sections, _ = UNITS[name]
    target = (values(sections, "Timer", "Unit") or [name.removesuffix(".timer") + ".service"])[0]
    assert target in UNITS and target.endswith(".service"), f"{name} starts {target}, which the doc does not define"


def test_every_check_and_backup_alerts_on_failure_through_a_unit_the_doc_defines():
    for name in ("agenda-health.service", "agenda-backup.service", "agenda-retention.service"):
        (target,) = values(UNITS[name][0], "Unit", "OnFailure")
        assert re.sub(r"@[^.]*\.service$", "@.service", target) in UNITS, f"{name}: OnFailure={target} is not defined"
    alert = " ".join(values(UNITS["agenda-alert@.service"][0], "Service", "ExecStart"))
    assert "systemd-cat" in alert or "mail" in alert


def test_the_health_check_and_the_backup_run_what_the_brief_of_each_says():
    health = values(UNITS["agenda-health.service"][0], "Service", "ExecStart")
    assert health[0] == "/opt/agenda/bin/agenda health http://127.0.0.1:8080/health"  # reads the body too
    assert re.search(r"curl -fsS --max-time 5 .*https://agenda\.example-clinic\.es/health$", health[1])
    backup = UNITS["agenda-backup.service"][0]
    assert values(backup, "Service", "ExecStart") == [
        "/opt/agenda/bin/agenda backup /var/backups/agenda --keep 14 --db /var/lib/agenda/clinic.db"]
    assert values(backup, "Service", "User") == ["agenda"]
    assert values(UNITS["agenda-health.timer"][0], "Timer", "OnCalendar") == ["*:0/5"]
    retention = UNITS["agenda-retention.service"][0]
    assert values(retention, "Service", "ExecStart") == [
        "/opt/agenda/bin/agenda retention run --db /var/lib/agenda/clinic.db"]
    assert values(UNITS["agenda-retention.timer"][0], "Timer", "Persistent") == ["true"]


def test_the_service_reads_the_clinics_own_settings_from_a_file_only_root_reads():
    """The file replication.md tells the admin to fill is created before the unit that reads it."""
    service = UNITS["agenda.service"][0]
    assert values(service, "Service", "EnvironmentFile") == ["/etc/agenda/agenda.env"]
    assert DOC.index("sudo install -m 0600 /dev/null /etc/agenda/agenda.env") < DOC.index("systemctl enable --now agenda")
    replication = (DOC_PATH.parent / "replication.md").read_text(encoding="utf-8")
    assert "/etc/agenda/agenda.env" in replication and "ReadWritePaths=/var/lib/agenda /var/backups/agenda " \
        "/mnt/agenda-replica" in replication


def test_the_service_needs_the_database_so_the_seed_comes_before_it_starts():
    seed = DOC.index("/opt/agenda/bin/agenda seed ")
    secret = DOC.index("/opt/agenda/bin/agenda secret set ")
    assert seed < secret < DOC.index("systemctl enable --now agenda")


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_systemd_itself_accepts_every_unit(tmp_path):
    """systemd-analyze verify: unknown keys, bad values, a command that is not executable.
    The commands Agenda installs do not exist here, so they point at a stub."""
    stub = tmp_path / "stub"
    stub.write_text("#!/bin/sh\n")
    stub.chmod(0o755)
    bodies = {name: body for name, (_, body) in UNITS.items()}
    # the optional e-mail, a line the doc says to add to the alert unit
    (mail,) = re.findall(r"^`(ExecStart=.*\| mail .*)`$", DOC, re.MULTILINE)
    bodies["agenda-mail-alert@.service"] = bodies["agenda-alert@.service"].rstrip("\n") + "\n" + mail + "\n"
    files = []
    for name, body in bodies.items():
        path = tmp_path / name
        path.write_text(body.replace("/opt/agenda/bin/agenda", str(stub)))
        files.append(str(path))
    result = subprocess.run(["systemd-analyze", "verify", "--man=no", *files], check=False, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr


def nginx_blocks():
    return [(body, before) for language, body, before in fenced_blocks() if language == "nginx"]


def test_the_nginx_steps_come_in_the_order_that_works():
    """A plain HTTP block with the name, nginx -t and a reload, certbot --nginx, then the proxy:
    the proxy's certificate files exist only after certbot, and certbot needs the name."""
    http_block = next(body for body, _ in nginx_blocks() if "proxy_pass" not in body)
    proxy_block = next(body for body, _ in nginx_blocks() if "proxy_pass" in body)
    assert "listen 80;" in http_block and "server_name agenda.example-clinic.es;" in http_block
    assert "ssl" not in http_block and "443" not in http_block
    positions = {
        "python3-certbot-nginx installed": DOC.index("apt install nginx python3-certbot-nginx"),
        "the HTTP block": DOC.index(http_block),
        "nginx -t and a reload": DOC.index("nginx -t && sudo systemctl reload nginx", DOC.index(http_block)),
        "certbot --nginx": DOC.index("sudo certbot --nginx -d agenda.example-clinic.es"),
        "the proxy block": DOC.index(proxy_block),
        "nginx -t and a reload again": DOC.index("nginx -t && sudo systemctl reload nginx", DOC.index(proxy_block)),
    }
    assert list(positions.values()) == sorted(positions.values()), positions
    assert "/etc/letsencrypt/live/agenda.example-clinic.es/fullchain.pem" in proxy_block
    assert "certonly" not in DOC  # certbot --nginx installs the certificate and reloads nginx at each renewal


@pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed")
@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl is not installed")
def test_nginx_t_passes_on_the_http_block_and_on_the_proxy(tmp_path):
    """Each site file as written, in a minimal nginx.conf, with a self-signed certificate where
    certbot puts its own and the logs in tmp_path."""
    live = tmp_path / "live"
    live.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-subj", "/CN=agenda.example-clinic.es", "-days", "1",
                    "-keyout", str(live / "privkey.pem"), "-out", str(live / "fullchain.pem")],
                   check=True, capture_output=True, timeout=60)
    blocks = nginx_blocks()
    assert len(blocks) == 2
    for number, (body, _) in enumerate(blocks):
        site = (body.replace("/etc/letsencrypt/live/agenda.example-clinic.es", str(live))
                    .replace("/var/log/nginx/", f"{tmp_path}/"))
        (tmp_path / f"site{number}.conf").write_text(site)
        temp = "\n".join(f"    {kind}_temp_path {tmp_path}/{kind};" for kind in
                         ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = tmp_path / f"nginx{number}.conf"
        conf.write_text(f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
                        f"http {{\n    access_log off;\n{temp}\n    include {tmp_path}/site{number}.conf;\n}}\n")
        result = subprocess.run(["nginx", "-t", "-p", str(tmp_path), "-e", f"{tmp_path}/error.log", "-c", str(conf)],
                                check=False, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and "test is successful" in result.stderr, (number, result.stderr)


def test_it_names_the_systems_and_the_python_each_needs():
    for words in ("Debian 12", "Ubuntu 22.04", "Ubuntu 24.04", "python3-venv", "ppa:deadsnakes/ppa",
                  "python3.11 python3.11-venv", "agenda.pyz"):
        assert words in DOC, words
    table = {row.split("|")[1].strip(): row for row in DOC.splitlines() if row.startswith(("| Debian", "| Ubuntu"))}
    assert "3.11" in table["Debian 12"] and "3.12" in table["Ubuntu 24.04"]
    assert "3.10" in table["Ubuntu 22.04"] and "too old" in table["Ubuntu 22.04"]


def test_the_server_installs_a_built_wheel_never_a_checkout():
    assert "pip wheel --no-deps -w dist ." in DOC and "tools/build_pyz.py" in DOC and "scp " in DOC
    installs = re.findall(r"/opt/agenda/bin/pip install (.*)", DOC)
    assert installs
    for arguments in installs:
        assert arguments.split()[-1].endswith("-py3-none-any.whl"), arguments


def test_an_upgrade_backs_up_first_and_says_how_to_go_back():
    upgrade = DOC[DOC.index("## 9."):]
    steps = [upgrade.index(text) for text in (
        "/opt/agenda/bin/agenda backup ", "systemctl stop", "/opt/agenda/bin/pip install ", "systemctl start")]
    assert steps == sorted(steps)
    for text in ("PRAGMA user_version", "agenda status", "/health", "--force-reinstall",
                 "/opt/agenda/bin/agenda restore "):
        assert text in upgrade, text
    assert upgrade.index("/opt/agenda/bin/agenda restore ") > upgrade.index("agenda-$OLD-py3-none-any.whl")


def test_journald_keeps_the_access_log_for_a_bounded_time():
    (journal,) = [body for _, body, _ in fenced_blocks() if body.startswith("[Journal]")]
    assert "/etc/systemd/journald.conf.d/agenda.conf" in DOC
    settings = dict(parse_unit(journal)["Journal"])
    assert re.fullmatch(r"\d+(day|d|week|month)", settings["MaxRetentionSec"])
    assert re.fullmatch(r"\d+[KMG]", settings["SystemMaxUse"])


def test_every_numbered_step_says_what_to_check():
    steps = re.split(r"^## (?=\d)", DOC, flags=re.MULTILINE)[1:]
    assert [step.split(".")[0] for step in steps] == ["1", "2", "3", "4", "5", "6", "6b", "7", "8", "9", "10"]
    for step in steps:
        assert "**Check:**" in step, step.splitlines()[0]


def test_every_health_answer_the_doc_shows_is_what_the_service_answers(api):
    """Each `/health` ... prints `{...}` of the doc, as JSON, is the answer of a service without a replica."""
    shown = re.findall(r"/health`?\s+prints\s+`(\{[^`]*\})`", DOC)
    assert len(shown) >= 4, shown
    answer = webtest.TestApp(api.app).get("/health").json
    assert [json.loads(text) for text in shown] == [answer] * len(shown)


def test_a_restore_says_to_replicate_to_a_new_path_afterwards():
    restoring = DOC[DOC.index("## Restoring a backup"):]
    assert "--from-replica" in restoring and "**new** replica" in restoring
    assert restoring.index("**new** replica") > restoring.index("agenda restore ")


def test_the_nightly_restore_drill_runs_replica_check_gently_with_the_services_settings_and_alerts():
    drill = UNITS["agenda-replica-check.service"][0]
    assert values(drill, "Service", "ExecStart") == ["/opt/agenda/bin/agenda replica check --db /var/lib/agenda/clinic.db"]
    assert values(drill, "Service", "EnvironmentFile") == ["/etc/agenda/agenda.env"]  # AGENDA_REPLICA and its keys
    assert values(drill, "Service", "Nice") == ["19"] and values(drill, "Service", "IOSchedulingClass") == ["idle"]
    assert values(drill, "Unit", "OnFailure") == ["agenda-alert@%n.service"]
    assert values(UNITS["agenda-replica-check.timer"][0], "Timer", "Persistent") == ["true"]


def test_the_hosts_nightly_drill_runs_host_drill_gently_with_the_hosts_replica_and_alerts():
    drill = UNITS["agenda-host-drill.service"][0]
    assert values(drill, "Service", "ExecStart") == ["/opt/agenda/bin/agenda host drill /var/lib/agenda-host"]
    assert values(drill, "Service", "EnvironmentFile") == ["/etc/agenda/agenda-host.env"]  # AGENDA_REPLICA, keys
    assert values(drill, "Service", "Nice") == ["19"] and values(drill, "Service", "IOSchedulingClass") == ["idle"]
    assert values(drill, "Service", "ReadWritePaths") == ["/var/lib/agenda-host"]  # each result kept in its clinic
    assert values(UNITS["agenda-host-drill.timer"][0], "Timer", "Persistent") == ["true"]
    for name in ("agenda-host-drill.service", "agenda-host-status.service"):  # the clinics' Litestream sockets
        assert values(UNITS[name][0], "Unit", "OnFailure") == ["agenda-alert@%n.service"]
        assert values(UNITS[name][0], "Unit", "JoinsNamespaceOf") == ["agenda-host.service"]
        assert values(UNITS[name][0], "Service", "PrivateTmp") == ["yes"]
    assert values(UNITS["agenda-host.service"][0], "Service", "PrivateTmp") == ["yes"]
    tail = DOC[DOC.index("/etc/systemd/system/agenda-host-drill.service"):]
    assert "**Check:**" in tail[:tail.index("## ")]
