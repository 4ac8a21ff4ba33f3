"""Pure parsers: captured text of one fabric command in, records from auditor.models out."""
