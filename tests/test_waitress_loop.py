"""The loop that waited on itself (docs/design.md): while a task answers, waitress's loop does not
ask to write its answer, so it never spins on a buffer the task's thread holds; a close, a buffer
the task waits on, and whatever is left once the task ends still go out whole."""

import socket
import threading

import pytest

from _agenda.web.serving import json_refusing_channel, make_server


class _Server:
    """Just enough of a waitress server for a channel to be made by hand."""

    def __init__(self):
        self.active_channels = {}

    def add_task(self, task):
        pass

    def pull_trigger(self):
        pass


@pytest.fixture
def channel():
    from waitress.adjustments import Adjustments

    ours, theirs = socket.socketpair()
    made = json_refusing_channel()(_Server(), ours, ("127.0.0.1", 1), Adjustments(), map={})
    try:
        yield made
    finally:
        made.close()
        theirs.close()


def test_a_task_s_answer_in_the_buffer_is_the_task_s_to_send(channel):
    channel.requests = [object()]  # a task is answering on this connection
    channel.writing = True  # and its thread is writing
    channel.total_outbufs_len = 4096
    assert not channel.writable()
    channel.total_outbufs_len = channel.adj.outbuf_high_watermark  # the task now waits for the loop
    assert channel.writable()


def test_the_loop_sends_what_a_finished_task_left_and_closes_when_told(channel):
    assert not channel.writable()
    channel.total_outbufs_len = 10
    assert channel.writable()  # no task: what is left is the loop's to send
    channel.total_outbufs_len, channel.requests = 0, [object()]
    channel.will_close = True
    assert channel.writable()
    channel.will_close, channel.close_when_flushed = False, True
    assert channel.writable()


def test_waitress_s_own_channel_would_spin_where_ours_waits(channel):
    """The hook holds: waitress's `writable` still asks to write a running task's bytes (the spin this
    channel keeps out); should an upgrade change that, this says the override may go."""
    from waitress.channel import HTTPChannel

    channel.requests, channel.total_outbufs_len, channel.writing = [object()], 4096, True
    assert HTTPChannel.writable(channel) and not channel.writable()


def _serve(app, **options):
    server, _ = make_server(app, host="127.0.0.1", port=0, threads=2, **options)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    return server, thread


def _read_answer(sock):
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(65536)
    head, _, body = head.partition(b"\r\n\r\n")
    length = int([line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")][0])
    while len(body) < length:
        chunk = sock.recv(1 << 20)
        assert chunk, "the connection closed before the whole answer"
        body += chunk
    return head, body[:length], body[length:]


def test_answers_over_the_buffer_s_mark_and_pipelined_ones_arrive_whole_and_in_order():
    """An answer eight times the outbuf's high-water mark, read by a client that waits before reading,
    then two pipelined requests on the same connection: each arrives whole, in order."""
    big = bytes(range(256)) * (4 * 4096)  # 4 MiB

    def app(environ, start_response):
        body = big if environ["PATH_INFO"] == "/big" else environ["PATH_INFO"].encode()
        start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body)))])
        return [body[i:i + 65536] for i in range(0, len(body), 65536)]

    server, thread = _serve(app, outbuf_high_watermark=512 * 1024)
    try:
        with socket.create_connection(("127.0.0.1", server.effective_port), timeout=30) as sock:
            sock.sendall(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
            threading.Event().wait(0.3)  # the task fills the buffers while nobody reads
            head, body, rest = _read_answer(sock)
            assert head.startswith(b"HTTP/1.1 200") and body == big and rest == b""
            sock.sendall(b"GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\n")
            _, first, rest = _read_answer(sock)
            received = rest
            while b"/two" not in received:
                received += sock.recv(65536)
            assert first == b"/one" and received.endswith(b"/two")
    finally:
        server.close()
        thread.join(timeout=10)
