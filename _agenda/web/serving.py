"""Serving under waitress: its channel ("Waitress's refusals", "The loop that waited on itself"), serving until
stopped, on one core ("One core"), and the service's log on stderr, one line a record ("Access log")."""

import contextlib
import logging
import os
import select
import signal
import time

from ..values.refusals import body_too_large, ClinicError
from .answers import _escape, _UNSAFE_IN_A_LINE, access_log, json_bytes, new_request_id, STATUS_ERROR_CODES

log = logging.getLogger("agenda")


LINGER_SECONDS, LINGER_IDLE_SECONDS, LINGER_BYTES = 1.0, 0.2, 8 * 1024 * 1024


def discard_unread(sock):
    """Read and drop what the client is still sending, within LINGER_* bounds, so that
    closing after a refusal does not reset the connection before the client reads why
    (nginx's lingering close). Called only while waitress's loop leaves the socket alone."""
    deadline, dropped, ready = time.monotonic() + LINGER_SECONDS, 0, select.poll()
    ready.register(sock, select.POLLIN)  # poll, as the loop: select() takes no descriptor past 1023
    while dropped < LINGER_BYTES:
        wait = min(LINGER_IDLE_SECONDS, deadline - time.monotonic())
        if wait <= 0 or not ready.poll(wait * 1000):
            return
        try:
            chunk = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            return
        if not chunk:
            return
        dropped += len(chunk)


def json_refusing_channel():
    """waitress's channel with two class attributes of ours (docs/design.md, "Waitress's
    refusals"): a parser that refuses a message framed two ways, and an error task that
    answers waitress's own refusals (400, 413, 431, 501) as the JSON of "Errors", after
    `discard_unread`; and a `writable` that keeps the loop from spinning on a task's answer."""
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser, ParsingError
    from waitress.task import ErrorTask

    class OneMessageParser(HTTPRequestParser):
        def parse_header(self, header_plus):
            """RFC 9112, 6.1: Content-Length beside Transfer-Encoding may be a smuggled request."""
            super().parse_header(header_plus)
            if self.chunked and "CONTENT_LENGTH" in self.headers:
                raise ParsingError("Content-Length and Transfer-Encoding: send one of them")

    class JsonErrorTask(ErrorTask):
        def execute(self):
            refusal = self.request.error
            if refusal.code == 413:
                error = body_too_large(self.channel.adj.max_request_body_size - 1)
            else:
                error = ClinicError(STATUS_ERROR_CODES.get(refusal.code, f"HTTP_{refusal.code}"),
                                    refusal.body or refusal.reason.lower())
            body = json_bytes(error.payload())
            rid = new_request_id()
            access_log.info("- - %s 0.0ms rid=%s (refused by the server: %s)", refusal.code, rid, refusal.reason)
            discard_unread(self.channel.socket)
            self.status = f"{refusal.code} {refusal.reason}"
            self.response_headers += [("Content-Type", "application/json"), ("X-Request-Id", rid)]
            self.set_close_on_finish()
            self.content_length = len(body)
            self.write(body)

    class JsonRefusingChannel(HTTPChannel):
        parser_class = OneMessageParser
        error_task_class = JsonErrorTask

        writing = False  # a task's thread is in write_soon, holding (or about to take) the outbuf's lock

        def write_soon(self, data):
            self.writing = True
            try:
                return super().write_soon(data)
            finally:
                self.writing = False
                if self.total_outbufs_len and self.connected:
                    self.server.pull_trigger()  # what the socket did not take is the loop's to send

        def writable(self):
            """The loop does not ask to write while a task's thread is writing (it holds the lock the loop
            would need: the spin); what a write leaves, the loop sends (docs/design.md, "The loop that
            waited on itself")."""
            if self.will_close or self.close_when_flushed:
                return True
            return bool(self.total_outbufs_len) and (not (self.requests and self.writing)
                                                     or self.total_outbufs_len >= self.adj.outbuf_high_watermark)

    return JsonRefusingChannel


def make_server(app, **options):
    """waitress's server for `app` with Agenda's channel (`json_refusing_channel`), and
    the map its loop watches: the listeners, then each connection."""
    import waitress

    sockets = {}
    server = waitress.create_server(app, map=sockets, **options)
    channel = json_refusing_channel()
    for listener in sockets.values():
        if hasattr(listener, "channel_class"):
            listener.channel_class = channel
    return server, sockets


CORES = ("one", "all")  # `agenda run --cores`: the service's threads on one core, or on every core allowed


def current_core():
    """The core this thread last ran on (/proc/thread-self/stat's 39th field), or None where there is no /proc."""
    try:
        with open("/proc/thread-self/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


def keep_to_one_core():
    """Keep every thread of this process, and those it starts later, on one core, the one it runs on: its
    threads then hand the interpreter's lock over without waking another core (docs/design.md, "One core").
    The core, said in the log (the system's, when it gives one only); None when the system cannot pin."""
    if not hasattr(os, "sched_setaffinity"):
        return None  # a system without cores to choose (not Linux)
    allowed = os.sched_getaffinity(0)
    if len(allowed) == 1:
        log.info("threads on core %s, the one the system gives", *allowed)
        return next(iter(allowed))
    core = current_core()
    core = core if core in allowed else min(allowed)
    try:
        pin_threads({core})
    except OSError as error:  # a sandbox that forbids it: serve on the cores given, every thread alike
        with contextlib.suppress(OSError):
            pin_threads(allowed)
        log.warning("cannot keep the threads on one core (%s); serving on the cores given", error)
        return None
    log.info("threads kept on core %s; --cores all to use every core", core)
    return core


def pin_threads(cores):
    """Every thread of this process on these cores (a thread that ends meanwhile skipped)."""
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(task), cores)


def serve_until_stopped(app, on_listening=None, cores="one", **options):
    """waitress until SIGTERM or Ctrl-C. On either, waitress stops taking requests and
    lets the ones in flight finish (its task dispatcher's shutdown) before we return.
    on_listening(url) runs once the port is bound: a port in use fails before it. cores: CORES."""
    server, _ = make_server(app, **options)
    if cores == "one":
        keep_to_one_core()

    def stop(signum, frame):
        raise SystemExit(0)  # waitress's loop catches it and shuts its threads down

    previous = signal.signal(signal.SIGTERM, stop)
    listening = getattr(server, "effective_listen", None) or [(server.effective_host, server.effective_port)]
    for host, port in listening:
        log.info("listening on http://%s:%s", host, port)
    if on_listening is not None:
        on_listening(f"http://{listening[0][0]}:{listening[0][1]}")
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
    log.info("stopped")


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class OneLineFormatter(logging.Formatter):
    """A record's message on one line whatever it holds: its control characters and line separators
    escaped (a traceback still follows it on lines of its own)."""

    def formatMessage(self, record):
        return _UNSAFE_IN_A_LINE.sub(_escape, super().formatMessage(record))


def log_to_stderr():
    """`agenda run`'s log on stderr, one line a record, written by the thread that logs it ("Access
    log"). Returns the handler, or None when the host program has set its own logging (tests do)."""
    root = logging.getLogger()
    if root.handlers:
        return None
    # Our lines name no thread or process: the logging HOWTO's "Optimization" stops gathering them per record.
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    writer = logging.StreamHandler()
    writer.setFormatter(OneLineFormatter(LOG_FORMAT))
    root.addHandler(writer)
    root.setLevel(logging.INFO)
    return writer


def stop_logging(writer):
    """Give stderr back (the end of `log_to_stderr`)."""
    if writer is not None:
        writer.flush()
        logging.getLogger().removeHandler(writer)
