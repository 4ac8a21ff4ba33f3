"""Ingest: parsed records into the store, one transaction per command. `captures` (topology and
counters), `logs` (switch, UFM, opensm and host logs), `jobs` (scheduler records, job logs and
the site's own files), `common` (what they share), `duplicates` (GUID clashes in a capture)."""
