"""A real SMTP server for the tests (aiosmtpd on 127.0.0.1, STARTTLS required, on a certificate trustme makes):
what it received, and switches that make it refuse for a while, refuse or greylist one address, or refuse the clinic
(its sender, its login)."""

import email
import email.policy
import socket
import ssl
import threading

import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

USER, PASSWORD = "citas", "secreto"  # the one login it takes


class Inbox:
    """aiosmtpd's handler: every message taken, as (envelope recipients, parsed message)."""

    def __init__(self):
        self.received, self.lock = [], threading.Lock()
        self.busy = False  # answer 451 to every message, as a server that refuses for a while
        self.refused = set()  # addresses answered 550 at RCPT
        self.refuse_sender = False  # answer 550 to MAIL FROM: the server refuses the clinic itself
        self.greylisted = set()  # addresses answered 450 at RCPT, as a greylisting server does
        self.no_relay = False  # answer 554 relay access denied at RCPT: the clinic may not send through it
        self.dmarc = False  # answer 550 5.7.26 at DATA: the clinic's From is not vouched for by its domain
        self.logins = []  # every login tried, as (user, whether it was taken)

    def __call__(self, server, session, envelope, mechanism, auth_data):
        """The authenticator: USER with PASSWORD, else 535."""
        taken = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
            USER.encode(), PASSWORD.encode())
        self.logins.append((auth_data.login.decode() if isinstance(auth_data, LoginPassword) else None, taken))
        return AuthResult(success=taken, handled=False)

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        if self.refuse_sender:
            return "550 5.7.1 sender not allowed"
        envelope.mail_from = address
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.no_relay:
            return "554 5.7.1 <" + address + ">: Relay access denied"
        if address in self.refused:
            return "550 5.1.1 no such mailbox"
        if address in self.greylisted:
            return "450 4.2.0 greylisted, try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.busy:
            return "451 4.3.0 try again later"
        if self.dmarc:
            return "550 5.7.26 Unauthenticated email from this domain is not accepted due to its DMARC policy"
        with self.lock:
            self.received.append((list(envelope.rcpt_tos),
                                  email.message_from_bytes(envelope.original_content, policy=email.policy.default)))
        return "250 OK"

    def messages(self):
        with self.lock:
            return list(self.received)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class MailServer:
    """The server, started; `url` for --smtp, `ca_file` to trust its certificate, `inbox` what it took."""

    def __init__(self, folder, starttls=True):
        self.ca = trustme.CA()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("127.0.0.1").configure_cert(context)
        self.ca_file = folder / "smtp-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self.inbox = Inbox()
        for attempt in range(5):  # a port found free may be taken by another test's server before it binds
            self.port = free_port()
            tls = {"tls_context": context, "require_starttls": True} if starttls else {}  # else none offered
            self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port, authenticator=self.inbox,
                                         **tls)
            try:
                self.controller.start()
                break
            except (OSError, RuntimeError):
                if attempt == 4:
                    raise
        self.url = f"smtp://127.0.0.1:{self.port}"
        self.login_url = f"smtp://{USER}@127.0.0.1:{self.port}"  # with the password PASSWORD, or a wrong one

    def stop(self):
        self.controller.stop()
