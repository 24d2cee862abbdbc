"""The web edges: what every answer shares, waitress, the caller's API and the calendar feeds."""
