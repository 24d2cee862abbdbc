"""The stack's own limit: a bare WSGI app on waitress (with Agenda's channel) doing one indexed
SQLite lookup and a small JSON answer, nothing else (no routing, no signature, no log).

    python bench/bare_app.py DB [--port 0] [--threads 2] [--one-core]
"""

import argparse
import json
import sqlite3
import threading
from urllib.parse import parse_qs

from _agenda.web.serving import keep_to_one_core, make_server

local = threading.local()


def make_app(db_path):
    def app(environ, start_response):
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = sqlite3.connect(db_path)
        nif = parse_qs(environ.get("QUERY_STRING", "")).get("nif", [""])[0]
        row = conn.execute("SELECT id, name, nif FROM patients WHERE nif = ?", (nif,)).fetchone()
        body = json.dumps({"id": str(row[0]), "name": row[1], "nif": row[2]} if row else {}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return app


def serve(make, description, threads=2):
    """The bare app `make(db_path)` on waitress at 127.0.0.1, as the bench starts both bare apps."""
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("db")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--threads", type=int, default=threads)
    parser.add_argument("--one-core", action="store_true", help="its threads on one core, as `agenda run` keeps its")
    options = parser.parse_args()
    if options.one_core:
        keep_to_one_core()
    # waitress with Agenda's channel, as `agenda run` serves (docs/design.md, "The loop that waited on itself")
    server, _ = make_server(make(options.db), host="127.0.0.1", port=options.port, threads=options.threads)
    print(f"listening on http://127.0.0.1:{server.effective_port}", flush=True)
    server.run()


if __name__ == "__main__":
    serve(make_app, __doc__)
