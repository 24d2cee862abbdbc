"""nginx's sites for a host's clinics (docs/deploy.md's proxy, once for every clinic; "A host of clinics"): a server
at each clinic's host name, one at the provider's name for every clinic reached by a path prefix, each desk open to
its own networks only."""

import os
from pathlib import Path

from ..values.printing import plural
from ..values.settings import desk_networks, settings_given
from .host import clinic_folders, CLINIC_SETTINGS, is_prefix

# nginx for a host (docs/deploy.md's proxy, once for every clinic): what every server shares, at the http level.
NGINX_SHARED = """# Written by `agenda host nginx`: write it again after adding or removing a clinic, then reload nginx.
log_format agenda_host_noquery '$remote_addr $host [$time_local] "$request_method $uri" $status $request_time';
limit_conn_zone $binary_remote_addr zone=agenda_host_perip:10m;
limit_req_zone $binary_remote_addr zone=agenda_host_logins:10m rate=10r/m;
limit_req_zone $binary_remote_addr zone=agenda_host_links:10m rate=60r/m;
map $request_id $agenda_host_request_id {
    "~^(?<first16>[0-9a-f]{16})" $first16;
}
"""
# What every clinic's server does with a request but the desk: the caller's API, the feeds, the patients' links and
# the booking page.
NGINX_LOCATIONS = """client_header_timeout 10s;
client_body_timeout 10s;
send_timeout 10s;
client_max_body_size 64k;
limit_conn agenda_host_perip 32;
error_page 413 @payload_too_large;
location @payload_too_large {{
    default_type application/json;
    return 413 '{{"error":{{"code":"PAYLOAD_TOO_LARGE","message":"the body is over 65536 bytes"}}}}';
}}
error_page 503 @too_many_connections;
location @too_many_connections {{
    default_type application/json;
    add_header X-Request-Id $agenda_host_request_id always;
    return 503 '{{"error":{{"code":"SERVICE_UNAVAILABLE","message":"too many requests at once from this address; retry","requestId":"$agenda_host_request_id"}}}}';
}}
proxy_set_header Host $host;
proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
proxy_set_header X-Forwarded-Proto $scheme;
location /feeds/ {{ access_log off; proxy_pass http://{upstream}; }}
location /cita/ {{ access_log off; limit_req zone=agenda_host_links burst=30 nodelay; proxy_pass http://{upstream}; }}
location /reservar {{ access_log off; limit_req zone=agenda_host_links burst=30 nodelay; proxy_pass http://{upstream}; }}
location / {{ proxy_pass http://{upstream}; proxy_request_buffering on; proxy_read_timeout 30s; }}
"""
NGINX_TLS = """server {{
    listen 80;
    server_name {name};
    return 301 https://$host$request_uri;
}}
server {{
    listen 443 ssl;
    server_name {name};
    ssl_certificate     {certificates}/{name}/fullchain.pem;
    ssl_certificate_key {certificates}/{name}/privkey.pem;
    ssl_protocols       TLSv1.2 TLSv1.3;
    add_header Strict-Transport-Security "max-age=31536000" always;
    access_log {logs}/agenda-host.access.log agenda_host_noquery;
    include {locations};
{desks}}}
"""
# A clinic's desk, for its desk_network only: at /desk, or at /PREFIX/desk for a clinic reached by a path prefix.
NGINX_DESK = """    location {prefix}/desk {{
{allow}        deny all;
        proxy_pass http://{upstream};
    }}
    location = {prefix}/desk/login {{
{allow}        deny all;
        limit_req zone=agenda_host_logins burst=5 nodelay;
        proxy_pass http://{upstream};
    }}
"""
# A clinic reached by a path prefix: its feeds, patients' links and booking page as agenda-locations.conf has them at
# the root.
NGINX_PREFIX = """    location /{prefix}/feeds/ {{ access_log off; proxy_pass http://{upstream}; }}
    location /{prefix}/cita/ {{
        access_log off;
        limit_req zone=agenda_host_links burst=30 nodelay;
        proxy_pass http://{upstream};
    }}
    location /{prefix}/reservar {{
        access_log off;
        limit_req zone=agenda_host_links burst=30 nodelay;
        proxy_pass http://{upstream};
    }}
"""
# A clinic without its certificate yet: its name on port 80 only, for `certbot --nginx -d NAME`.
NGINX_PLAIN = """server {{
    listen 80;
    server_name {name};
    location / {{ return 404; }}
}}
"""


def proxy_sites(folder, where, prefix_host=None):
    """(agenda-host.conf's text, how many clinics it serves, notes, what was left out and why) for the clinics under
    `folder`; `where`: the certificates' and logs' folders, the locations file, the upstream."""
    servers, prefixed, notes, wrong = [NGINX_SHARED], [], [], []
    for name, path in sorted(clinic_folders(folder).items()):
        try:
            settings = settings_given(path / CLINIC_SETTINGS, os.environ)
        except ValueError as error:
            wrong.append(f"{name}: left out, a wrong setting: {error}")
            continue
        networks = desk_networks(settings.get("desk_network", ""))
        notes += [] if networks else [f"{name}: its desk is closed to every address: set desk_network in its "
                                      f"{CLINIC_SETTINGS}"]
        desk = NGINX_DESK.format(prefix=f"/{name}" if is_prefix(name) else "", upstream=where["upstream"],
                                 allow="".join(f"        allow {network};\n" for network in networks))
        if is_prefix(name):
            prefixed.append(desk + NGINX_PREFIX.format(prefix=name, upstream=where["upstream"]))
        else:
            servers.append(nginx_server(name, desk, where, notes))
    if prefixed and prefix_host:
        servers.append(nginx_server(prefix_host, "".join(prefixed), where, notes))
    elif prefixed:
        wrong.append(f"{plural(len(prefixed), 'clinic')} reached by a path prefix left out: give --prefix-host, "
                     f"the host name they are reached at (agenda.provider.es)")
    written = len(servers) - 1 - bool(prefixed and prefix_host) + (len(prefixed) if prefix_host else 0)
    return "\n".join(servers), written, notes, wrong


def nginx_server(name, desks, where, notes):
    """nginx's server for a host name with `desks` (a clinic's desk, or every prefix clinic's): over TLS when
    its certificate is there, else its name on port 80 only, said in `notes`."""
    if (Path(where["certificates"]) / name / "fullchain.pem").is_file():
        return NGINX_TLS.format(name=name, desks=desks, **where)
    notes.append(f"{name}: no certificate yet, port 80 only: sudo certbot --nginx -d {name}, then write again")
    return NGINX_PLAIN.format(name=name)
