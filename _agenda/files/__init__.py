"""The clinic's own files in and out: the catalog file, other systems' lists, the whole agenda exported."""
