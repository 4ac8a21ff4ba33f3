"""The one entry point that ranks a window (issue #22).

`suspects`, `report`, `nightly`, `export`, the demo and the evaluation all rank through
`rank_window`: the evidence of [since, until] (`correlate.gather`), the suspects with the
rules table's weights and the site's overrides (`rank.rank`), and, when `[outcomes]
learned_weights` is on, the rules reweighed by how often each was right over `[outcomes] since`
(judged with the site's `[nightly] verify_days`). The same window with the same settings ranks
the same in every output (tests/test_pipeline.py holds them equal with non-default settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from auditor.analyse.correlate import gather
from auditor.analyse.evidence import Evidence
from auditor.analyse.rank import Suspect, as_json, rank
from auditor.analyse.routed import RouteBook
from auditor.config import OutcomesSettings, RankingSettings

if TYPE_CHECKING:
    from auditor.analyse.outcomes import Outcomes
    from auditor.analyse.paths import Routes
    from auditor.config import Settings
    from auditor.models import Fabric
    from auditor.store import Store


@dataclass(frozen=True, slots=True)
class RankSettings:
    """What the ranking of a window depends on, from the config (`from_settings`)."""

    ranking: RankingSettings = field(default_factory=RankingSettings)
    outcomes: OutcomesSettings = field(default_factory=OutcomesSettings)
    verify_days: float = 7.0  # [nightly] verify_days: when a swap counts as verified
    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings) -> RankSettings:
        return cls(settings.ranking, settings.outcomes, settings.nightly.verify_days,
                   dict(settings.aliases))


@dataclass(slots=True)
class Ranking:
    """A window's evidence, its suspects best first, and (when asked or when the learned
    weights are on) what the remembered suspects before it turned out to be."""

    evidence: Evidence
    suspects: list[Suspect]
    outcomes: Outcomes | None = None

    def as_json(self, limit: int | None = None) -> dict[str, Any]:
        """The suspects JSON (`auditor suspects --format json` without its coverage)."""
        return as_json(self.evidence, self.suspects, limit)


# A failed job's fault may lie before the window (its run began earlier): the routes in effect
# this long before `since` are read too.
ROUTES_BEFORE = timedelta(days=2)


def route_book(store: Store, since: datetime, until: datetime, adaptive: bool
               ) -> RouteBook | None:
    """The forwarding tables in effect over [since - ROUTES_BEFORE, until] (issue #23): the
    capture in effect at its start and each later one that changed a table, loaded when the
    correlation first asks; None when no tables were stored by `until`."""
    start = since - ROUTES_BEFORE
    first = store.lft_capture_at(start)
    captures = ([first[0]] if first else []) + store.lft_route_changes(start, until)
    if not captures:
        return None
    # imported only for a fabric with tables: routing and paths import numpy (0.12 s)
    from auditor.analyse.routing import routes_at

    def load(at: datetime, shared: tuple[datetime, Fabric] | None) -> Routes | None:
        if shared is not None and store.snapshot_times(at, limit=1)[:1] == [shared[0]]:
            return routes_at(store, at, shared[1])
        return routes_at(store, at)

    return RouteBook(captures, load, adaptive=adaptive)


def rank_window(store: Store, since: datetime, until: datetime,
                settings: RankSettings | None = None, *, judge: bool = False) -> Ranking:
    """Rank [since, until] (naive UTC). `judge`: also judge the remembered suspects of
    `[outcomes] since` before `until` (the report's outcomes section); they are judged anyway
    when the learned weights are on."""
    settings = settings or RankSettings()
    evidence = gather(store, since, until, settings.ranking, aliases=settings.aliases,
                      book=route_book(store, since, until, settings.ranking.adaptive_routing))
    suspects = rank(evidence, settings.ranking)
    judged: Outcomes | None = None
    if judge or settings.outcomes.learned_weights:
        from auditor.analyse import outcomes as outcomes_mod

        span = settings.outcomes.span
        judged = outcomes_mod.judge(store, until - span, until, settings.outcomes,
                                    settings.verify_days)
        if settings.outcomes.learned_weights:
            suspects = outcomes_mod.apply_weights(
                suspects, outcomes_mod.learned_weights(judged), span.total_seconds() / 86400)
    return Ranking(evidence, suspects, judged)


__all__ = ["RankSettings", "Ranking", "rank_window"]
