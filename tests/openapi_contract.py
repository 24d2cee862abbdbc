"""Every answer the tests see is checked against openapi.json, so the document cannot drift.

`checked(app)` wraps a WSGI app: each response passing through it must be one its
operation documents (status, media type, body schema). `CONTRACT.check(...)` does the
same for answers read off a real server. An answer of a path or method the document does
not have must still be the error object of design.md's "Errors" (404 NOT_FOUND, 405
METHOD_NOT_ALLOWED).
"""

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT_URI = "urn:agenda:openapi"
METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")


def pointer_part(text):
    return text.replace("~", "~0").replace("/", "~1")


class Contract:
    def __init__(self, document):
        self.document = document
        resource = Resource.from_contents(document, default_specification=DRAFT202012)
        self.registry = Registry().with_resource(DOCUMENT_URI, resource)
        # literal paths before templated ones: /appointments/range is not /appointments/{appointmentId}
        templates = sorted(document["paths"], key=lambda path: path.count("{"))
        self.paths = [(re.compile(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(path))), path) for path in templates]
        self.validators = {}

    def validate(self, pointer, value):
        if pointer not in self.validators:
            self.validators[pointer] = Draft202012Validator({"$ref": f"{DOCUMENT_URI}#{pointer}"},
                                                            registry=self.registry)
        errors = sorted(self.validators[pointer].iter_errors(value), key=lambda error: list(error.path))
        return [f"{'/'.join(map(str, error.path)) or '(top)'}: {error.message}" for error in errors]

    def operation(self, method, path):
        """(path template, operation) for a concrete request path, or (None, None)."""
        for pattern, template in self.paths:
            if pattern.fullmatch(path):
                return template, self.document["paths"][template].get(method.lower())
        return None, None

    def problems(self, method, path, status, headers, body):
        """What is wrong with this answer to METHOD path (decoded, no query): a list of sentences.

        headers: the answer's headers, names in lower case.
        """
        method = method.upper()
        content_type = headers.get("content-type")
        template, operation = self.operation(method, path)
        where = f"{method} {path} answered {status}"
        if operation is None:
            if status not in (404, 405):
                return [f"{where}, but the document has no such operation"]
            pointer = "/components/schemas/Error"
        else:
            pointer = f"/paths/{pointer_part(template)}/{method.lower()}/responses/{status}"
            response = operation["responses"].get(str(status))
            if response is None:
                return [f"{where}, a status the document does not list for {method} {template}"]
            if "$ref" in response:
                pointer = response["$ref"][1:]
                response = self.resolve(pointer)
            for name, header in response.get("headers", {}).items():
                value = headers.get(name.lower())
                if value is None and self.resolve(header["$ref"][1:]).get("required"):
                    return [f"{where} without the header {name}"]
                if value is not None and self.validate(header["$ref"][1:] + "/schema", value):
                    return [f"{where} with {name}: {value!r}, which its schema refuses"]
            if "content" not in response:
                return [] if body == b"" else [f"{where} with a body; the document says none"]
            pointer += "/content/application~1json/schema"
        if (content_type or "").split(";")[0].strip() != "application/json":
            return [f"{where} as {content_type!r}, not application/json"]
        try:
            value = json.loads(body)
        except ValueError:
            return [f"{where} with a body that is not JSON"]
        return [f"{where}: {problem}" for problem in self.validate(pointer, value)]

    def resolve(self, pointer):
        node = self.document
        for part in pointer.strip("/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def check(self, method, url, status, headers, body):
        """Assert that the answer to METHOD url (path and query as sent) keeps the document."""
        headers = {name.lower(): value for name, value in headers.items()}
        problems = self.problems(method, unquote(urlsplit(url).path), status, headers, body)
        assert not problems, "the answer breaks openapi.json:\n" + "\n".join(problems)


CONTRACT = Contract(json.loads((ROOT / "openapi.json").read_text(encoding="utf-8")))


def checked(app, contract=CONTRACT):
    """The WSGI app, with every answer checked against the document as it passes."""

    def wsgi(environ, start_response):
        answer = {}

        def start(status, headers, exc_info=None):
            answer["status"] = int(status.split(" ", 1)[0])
            answer["headers"] = {name.lower(): value for name, value in headers}
            return start_response(status, headers, exc_info)

        chunks = app(environ, start)
        try:
            body = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        path = environ.get("PATH_INFO", "")
        try:  # WSGI carries the path's bytes as latin-1 text
            path = path.encode("latin-1").decode("utf-8", "replace")
        except UnicodeEncodeError:  # webtest may pass it already decoded
            pass
        problems = contract.problems(environ["REQUEST_METHOD"], path, answer["status"], answer["headers"], body)
        assert not problems, "the answer breaks openapi.json:\n" + "\n".join(problems)
        return [body]

    wsgi.clinic = getattr(app, "clinic", None)
    return wsgi
