"""Ingest: parsed records into the store, one transaction per command. `kinds` (the registry of
input formats: parser, `--kind` help, how `--kind auto` knows each), `plan` (which ingester takes
which file), `captures` (topology and counters), `logs` (switch, UFM, opensm and host logs),
`jobs` (scheduler records, job logs, the site's own files, host events), `optics` (transceiver
diagnostics), `common` (what they share), `duplicates` (GUID clashes in a capture)."""
