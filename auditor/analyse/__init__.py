"""Analysis of what the store holds: the fabric (`topology`, `health`), flaps, the correlation of
flaps, counters and jobs (`correlate`), the ranking (`rank`) and replacement tracking. No I/O of
its own: it reads through auditor.store."""
