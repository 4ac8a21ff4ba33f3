"""Dashboards shipped with fabric-auditor: Grafana JSON over what `auditor metrics` writes."""
