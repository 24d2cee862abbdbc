"""Backups that leave the machine encrypted, with age (pyrage, the `encrypt` extra): recipients, identities,
sealing a stream into a file and opening one into memory ("Encrypted backups")."""

import io
import os
from pathlib import Path

AGE_MAGIC = b"age-encryption.org/v1"


class SealingError(Exception):
    """A recipient, an identity or a sealed file that cannot be used; the message says why."""


def age():
    """The pyrage module; SealingError saying how to install it when it is missing."""
    try:
        import pyrage
    except ImportError:
        raise SealingError("encrypted backups need pyrage: pip install 'agenda[encrypt]'") from None
    return pyrage


def is_sealed(path):
    """Whether the file at `path` is an age file (by its first bytes)."""
    with open(path, "rb") as file:
        return file.read(len(AGE_MAGIC)) == AGE_MAGIC


def recipients_of(values):
    """age recipients from each value: an `age1...` key, an `ssh-ed25519`/`ssh-rsa` public key line,
    or a file holding such lines (`#` comments allowed)."""
    pyrage, found = age(), []
    for value in values:
        lines = [value]
        if not value.startswith(("age1", "ssh-")) and Path(value).is_file():
            lines = [line.strip() for line in Path(value).read_text(encoding="utf-8").splitlines()
                     if line.strip() and not line.lstrip().startswith("#")]
        for line in lines:
            kind = pyrage.ssh.Recipient if line.startswith("ssh-") else pyrage.x25519.Recipient
            try:
                found.append(kind.from_str(line))
            except pyrage.RecipientError:
                raise SealingError(f"{line[:24]!r} is not an age recipient (age1...) or an SSH public key") from None
    if not found:
        raise SealingError("no recipient given: --encrypt-to age1... (or a file of recipients)")
    return found


def identities_of(path):
    """The age identities (AGE-SECRET-KEY-1... lines) or the SSH private key in the file at `path`."""
    pyrage, data = age(), Path(path).read_bytes()
    if b"PRIVATE KEY" in data:
        try:
            return [pyrage.ssh.Identity.from_buffer(data)]
        except pyrage.IdentityError:
            raise SealingError(f"{path}: an SSH key age cannot use (ed25519 or RSA, without a passphrase)") from None
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    try:
        found = [pyrage.x25519.Identity.from_str(line) for line in lines]
    except pyrage.IdentityError:
        found = []
    if not found:
        raise SealingError(f"{path}: no age identity in it (a line AGE-SECRET-KEY-1..., as age-keygen writes)")
    return found


def seal_stream(plain, target, recipients):
    """Encrypt what the file object `plain` reads to these recipients into the new file `target`, mode
    0600 from its first byte, as it reads: the clear text is never written anywhere; the size written."""
    pyrage = age()
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as file:
            try:
                pyrage.encrypt_io(plain, file, recipients)
            except pyrage.EncryptError as error:
                raise SealingError(f"cannot seal the copy: {error}") from None
            file.flush()
            os.fsync(file.fileno())
            return file.tell()
    except BaseException:
        Path(target).unlink(missing_ok=True)
        raise


def open_sealed(sealed, identities):
    """The clear bytes of the age file `sealed`, in memory only (a BytesIO); SealingError when no
    identity opens it."""
    pyrage, plain = age(), io.BytesIO()
    try:
        with open(sealed, "rb") as file:
            pyrage.decrypt_io(file, plain, identities)
    except pyrage.DecryptError:
        raise SealingError(f"{sealed} cannot be opened with that key: it was encrypted to another "
                           "recipient, or it is damaged") from None
    return plain
