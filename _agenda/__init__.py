"""Agenda's insides, one module per concern; `agenda.py` beside this package is the face."""

__version__ = "0.2.0"
