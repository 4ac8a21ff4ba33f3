"""Analysis of what the store holds; no I/O of its own (it reads through auditor.store).

The one entry point is `pipeline.rank_window`. The evidence of a window: the fabric
(`topology`, `degraded` links), `flaps`, `hosts` (hosts that went away), `correlate` (gathers
the evidence records of `evidence`), `blame` (which failed job died of what), `survivors` (jobs
that ran through a flap and lived), `ber`, `optics` (the transceiver watch list), `coverage`
(what the evidence could not see). Scoring: `rules` (the table of every point), `rank`
(points, verdicts, actions). Around the report: `audit`, `replacements`, `outcomes`, `cohorts`,
`snmp_changes`.
"""
