"""The `agenda` command: the one click group (root.py) and a module per family of commands."""
