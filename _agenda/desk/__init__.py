"""The staff desk at /desk: its route table, handlers by job, templates and words."""
