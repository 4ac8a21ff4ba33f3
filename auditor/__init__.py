"""fabric-auditor: find the InfiniBand cables, transceivers and switch ports that break jobs."""

__version__ = "0.1.0"
