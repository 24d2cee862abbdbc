"""An SFTP server on loopback for Litestream's sftp replica (asyncssh's own server, in a thread of the test's
process): one user, `agenda`, with a password; its files are a folder of the test's."""

import asyncio
import threading

import asyncssh

USER, PASSWORD = "agenda", "sftp-test-password"


class Login(asyncssh.SSHServer):
    def begin_auth(self, username):
        return True

    def password_auth_supported(self):
        return True

    def validate_password(self, username, password):
        return username == USER and password == PASSWORD


class SftpServer:
    """Serves `root` over SFTP on 127.0.0.1 until stopped: `url(path)` is a replica URL Litestream takes."""

    def __init__(self, root):
        self.root, self.loop, self.ready = str(root), asyncio.new_event_loop(), threading.Event()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self.listen(), self.loop).result(timeout=60)
        self.port = self.server.sockets[0].getsockname()[1]

    async def listen(self):
        key = asyncssh.generate_private_key("ssh-ed25519")
        self.host_key = key.export_public_key().decode().strip()  # as ssh-keyscan prints it, less the host's name
        return await asyncssh.listen("127.0.0.1", 0, server_host_keys=[key],
                                     server_factory=Login,
                                     sftp_factory=lambda channel: asyncssh.SFTPServer(channel, chroot=self.root))

    def url(self, path):
        return f"sftp://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{path}"

    def stop(self):
        self.server.close()
        asyncio.run_coroutine_threadsafe(self.server.wait_closed(), self.loop).result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=60)
