"""The loop that waited on itself (docs/design.md): bytes a task has handed to waitress that the socket
could not take yet go out while the task goes on thinking, and a stream to a client that left stops.
(Each failed with a `writable` that held back every running task's bytes.)"""

import socket
import threading
import time

from test_waitress_loop import _serve

BIG = bytes(range(256)) * (32 * 1024)  # 8 MiB: more than loopback's socket buffers, less than 16 MiB
THINKS = 60  # how long an app waits for its reader: the old bug shows as this wait running out


def _connect(server):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)  # a client that takes little at a time
    sock.settimeout(THINKS)
    sock.connect(("127.0.0.1", int(server.effective_port)))
    return sock


def _read_until(sock, received, needed, pause=0.0, size=1 << 20):
    while len(received) < needed:
        time.sleep(pause)
        chunk = sock.recv(size)
        if not chunk:
            break
        received += chunk
    return received


def _body_start(sock):
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(65536)
    return head.partition(b"\r\n\r\n")[2]


def _arrives(app, request, length, wait=0.3, pause=0.0, size=1 << 20, **options):
    """Send `request` and, after `wait` seconds, read `length` bytes of body; app(environ, start_response,
    held) thinks until the reader sets `held`, holding every byte: it must not have had to stop thinking
    first (no clock decides, only the order of the two events)."""
    held, gave_up = threading.Event(), threading.Event()

    def thinking(environ, start_response):
        return app(environ, start_response, lambda: held.wait(THINKS) or gave_up.set())
    server, thread = _serve(thinking, **options)
    try:
        with _connect(server) as sock:
            sock.settimeout(THINKS * 2)
            sock.sendall(request)
            time.sleep(wait)  # the task writes what the socket takes and leaves the rest in the outbuf
            body = _read_until(sock, _body_start(sock), length, pause, size)
            held.set()
            assert len(body) >= length, f"only {len(body)} of {length} bytes"
            assert not gave_up.is_set(), f"the {length} bytes arrived only once the app stopped thinking"
    finally:
        held.set()
        server.close()
        thread.join(timeout=THINKS)


def test_a_finished_answer_is_not_held_back_by_the_pipelined_request_after_it():
    """GET /big then GET /slow in one packet. /big's task ends with part of its answer still in the
    outbuf; /slow's task then thinks until the reader holds /big. /big should reach the client at once."""

    def app(environ, start_response, think):
        if environ["PATH_INFO"] == "/slow":
            think()
            body = [b"slow"]
        else:
            body = [BIG[i:i + 65536] for i in range(0, len(BIG), 65536)]
        start_response("200 OK", [("Content-Length", str(sum(map(len, body))))])
        return body

    _arrives(app, b"GET /big HTTP/1.1\r\nHost: a\r\n\r\nGET /slow HTTP/1.1\r\nHost: a\r\n\r\n", len(BIG))


def test_a_streamed_answer_goes_out_while_the_app_thinks_about_the_next_chunk():
    """An app yields 8 MiB, then thinks before its last chunk: the 8 MiB should arrive meanwhile."""

    def app(environ, start_response, think):
        start_response("200 OK", [("Content-Length", str(len(BIG) + 3))])
        for i in range(0, len(BIG), 65536):
            yield BIG[i:i + 65536]
        think()
        yield b"end"

    _arrives(app, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", len(BIG))


def test_one_chunk_over_the_high_water_mark_goes_out_whole_while_the_app_thinks():
    """One 12 MiB write over a 4 MiB high-water mark, then thought, to a client that reads 64 KiB every
    5 ms: the loop sends down to the mark, and what is below it should not wait for the app."""
    huge = BIG + BIG[:4 << 20]

    def app(environ, start_response, think):
        start_response("200 OK", [("Content-Length", str(len(huge) + 3))])
        yield huge
        think()
        yield b"end"

    _arrives(app, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", len(huge), wait=0, pause=0.005, size=65536,
             outbuf_high_watermark=4 << 20)


def test_a_stream_to_a_client_that_left_stops_and_frees_its_thread():
    """A slow stream (1 KiB every 50 ms) whose client reads the head and hangs up: waitress should notice
    (ClientDisconnected ends the app's iterator) within a few seconds, not after 16 MiB."""
    ended, stop = threading.Event(), threading.Event()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])  # chunked: no length
        try:
            while not stop.is_set():
                yield b"x" * 1024
                time.sleep(0.05)
        finally:
            ended.set()

    server, thread = _serve(app)
    try:
        sock = _connect(server)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        sock.settimeout(THINKS)
        _body_start(sock)
        sock.close()
        assert ended.wait(THINKS), f"the app still streams to a client that left {THINKS} s ago (16 MiB: 800 s)"
    finally:
        stop.set()
        server.close()
        thread.join(timeout=10)
