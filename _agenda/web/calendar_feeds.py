"""The calendar feeds' edge ("Calendar feeds"): `GET /feeds/<token>.ics` for calendar apps, the token
all the access it gives; no signature, no session."""

import bottle

from ..values.refusals import ClinicError
from ..domain.feeds import feed_calendar

FEED_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"}


def doctor_feed(token):
    """The doctor's feed as text/calendar; 404 for a token unknown or revoked."""
    try:
        body = feed_calendar(bottle.request.app.clinic, token)
    except ClinicError:
        return bottle.HTTPResponse("no such feed\n", 404, {"Content-Type": "text/plain; charset=utf-8", **FEED_HEADERS})
    return bottle.HTTPResponse(body, 200, {"Content-Type": "text/calendar; charset=utf-8", **FEED_HEADERS})


FEED_ROUTES = [  # (method, path, handler, route config)
    ("GET", "/feeds/<token:re:[A-Za-z0-9_-]{20,64}>.ics", doctor_feed, {"feed": True}),
]
