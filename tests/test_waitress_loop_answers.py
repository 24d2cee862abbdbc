"""The loop that waited on itself (docs/design.md): bytes a task has handed to waitress that the socket
could not take yet go out while the task goes on thinking, and a stream to a client that left stops.
(Each failed with a `writable` that held back every running task's bytes.)"""

import socket
import threading
import time

from test_waitress_loop import _serve

BIG = bytes(range(256)) * (32 * 1024)  # 8 MiB: more than loopback's socket buffers, less than 16 MiB


def _connect(server):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)  # a client that takes little at a time
    sock.settimeout(5)
    sock.connect(("127.0.0.1", int(server.effective_port)))
    return sock


def _read_until(sock, received, needed, deadline, pause=0.0, size=1 << 20):
    while len(received) < needed and time.monotonic() < deadline:
        time.sleep(pause)
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(size)
        except socket.timeout:
            break
        if not chunk:
            break
        received += chunk
    return received


def _body_start(sock, deadline):
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(65536)
    return head.partition(b"\r\n\r\n")[2]


def _arrives(app, request, length, wait=0.3, within=2.0, pause=0.0, size=1 << 20, **options):
    """Send `request` and, after `wait` seconds, read: `length` bytes of body arrive within `within` seconds."""
    server, thread = _serve(app, **options)
    try:
        with _connect(server) as sock:
            sock.sendall(request)
            time.sleep(wait)  # the task writes what the socket takes and leaves the rest in the outbuf
            started = time.monotonic()
            body = _read_until(sock, _body_start(sock, started + within), length, started + within, pause, size)
            took = time.monotonic() - started
            assert len(body) >= length, f"only {len(body)} of {length} bytes in {took:.1f} s"
    finally:
        server.close()
        thread.join(timeout=10)


def test_a_finished_answer_is_not_held_back_by_the_pipelined_request_after_it():
    """GET /big then GET /slow in one packet. /big's task ends with part of its answer still in the
    outbuf; /slow's task then thinks for 3 s before writing. /big should reach the client at once."""

    def app(environ, start_response):
        if environ["PATH_INFO"] == "/slow":
            time.sleep(3)
            body = [b"slow"]
        else:
            body = [BIG[i:i + 65536] for i in range(0, len(BIG), 65536)]
        start_response("200 OK", [("Content-Length", str(sum(map(len, body))))])
        return body

    _arrives(app, b"GET /big HTTP/1.1\r\nHost: a\r\n\r\nGET /slow HTTP/1.1\r\nHost: a\r\n\r\n", len(BIG))


def test_a_streamed_answer_goes_out_while_the_app_thinks_about_the_next_chunk():
    """An app yields 8 MiB, then thinks 3 s before its last chunk: the 8 MiB should arrive meanwhile."""

    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", str(len(BIG) + 3))])
        for i in range(0, len(BIG), 65536):
            yield BIG[i:i + 65536]
        time.sleep(3)
        yield b"end"

    _arrives(app, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", len(BIG))


def test_one_chunk_over_the_high_water_mark_goes_out_whole_while_the_app_thinks():
    """One 12 MiB write over a 4 MiB high-water mark, then 5 s of thought, to a client that reads 64 KiB
    every 5 ms (about 1 s for it all): the loop sends down to the mark, and what is below it should not
    wait for the app."""
    huge = BIG + BIG[:4 << 20]

    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", str(len(huge) + 3))])
        yield huge
        time.sleep(5)
        yield b"end"

    _arrives(app, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", len(huge), wait=0, within=3.0, pause=0.005, size=65536,
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
        _body_start(sock, time.monotonic() + 2)
        sock.close()
        assert ended.wait(4), f"the app still streams to a client that left 4 s ago"
    finally:
        stop.set()
        server.close()
        thread.join(timeout=10)
