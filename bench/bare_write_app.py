"""The stack's own limit for a durable write: a bare WSGI app on waitress that stores each
request's body with one INSERT and a commit, in WAL mode with synchronous=FULL (as Agenda's
"Storage"), and answers a small JSON; nothing else (no routing, no signature, no log).

    python bench/bare_write_app.py DB [--port 0] [--threads 1]

DB is created if missing, with one table. With more than one thread, the threads queue on
one lock before writing, as Agenda's do ("Connections and the write lock"), so none sleeps
in SQLite's busy handler.
"""

import json
import sqlite3
import threading


local = threading.local()
write_lock = threading.Lock()


def connect(db_path):
    conn = sqlite3.connect(db_path, timeout=5.0)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def make_app(db_path):
    with connect(db_path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS writes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    conn.close()

    def app(environ, start_response):
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = connect(db_path)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length).decode("utf-8") if length else "{}"
        with write_lock:
            row_id = conn.execute("INSERT INTO writes (body) VALUES (?)", (body,)).lastrowid
            conn.commit()
        answer = json.dumps({"id": str(row_id)}).encode()
        start_response("201 Created", [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))])
        return [answer]

    return app


if __name__ == "__main__":
    from bare_app import serve  # bench/ is the script's folder, first on sys.path

    serve(make_app, __doc__, threads=1)
