"""The clinic's refusals: `ClinicError` (a code, a message, the rule broken and the field, "Errors"), and the
two every edge raises alike, `invalid` and `body_too_large`. Imports nothing of Agenda's."""


class ClinicError(Exception):
    """A refusal someone can act on: a code, an English message, the rule broken and the field it concerns
    ("Errors"); `parts` holds each (code, rule, field) of a refusal naming several. A slot's rule is its reason.
    Each edge says it its own way: the API as a status and JSON, the desk in its words, the CLI as one line."""

    def __init__(self, code, message, rule=None, field=None, parts=(), **extra):
        super().__init__(message)
        self.code, self.message, self.extra = code, message, extra
        self.rule, self.field = rule if rule is not None else extra.get("reason"), field
        self.parts = tuple(parts) or ((code, self.rule, field),)

    def payload(self):
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


def invalid(message, rule=None, field=None, parts=()):
    """An INVALID_REQUEST: its message, and the rule broken and the field it concerns, or each part's."""
    return ClinicError("INVALID_REQUEST", message, rule, field, parts)


def body_too_large(limit):
    """The 413 of "Errors", from the app and from waitress alike."""
    return ClinicError("PAYLOAD_TOO_LARGE", f"the body is over {limit} bytes")
