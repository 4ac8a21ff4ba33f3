-- The error-counter increases `suspects` uses, from one scan of the counters (issue #13: two
-- runs of counter_deltas.sql were 101 ms of `suspects --since 30d`, most of it the same scan and
-- the same rows twice):
--   * LinkDownedCounter increases above 0 over ($flaps_since, $until] (the flaps' window), and
--   * every other counter's increases over ($since, $until]: those that are not 0, and all of
--     SymbolErrorCounter's (its quiet intervals count in a port's BER),
--   * and in both windows every reset (a reading below the one before: a reboot, a driver
--     reload, a `perfquery -R`), whatever its delta: an HCA's counters restarting is evidence
--     that its host rebooted (issue #20),
-- each row exactly as counter_deltas.sql run over that window returns it (guid, port, counter,
-- prev_at, seen_at, delta, reset, saturated), ordered as it orders them.
-- A window's readings start at the last counter snapshot before it, so the two windows read
-- different readings; a series (one counter of one port) is read in one window only, so each
-- reading is kept when its counter's window holds it and the steps run over those. An "implied
-- zero" (a series ibqueryerrors printed, missing from one of its snapshots) belongs to a window
-- when that window holds the snapshot and an ibqueryerrors reading of the series, as
-- counter_deltas.sql decides: held_from is the earliest window start that holds it.
with starts as (
    select coalesce(max(observed_at) filter (where observed_at <= $flaps_since),
                    timestamp '1970-01-01') as flaps_first,
           coalesce(max(observed_at) filter (where observed_at <= $since),
                    timestamp '1970-01-01') as rank_first
    from sources
    where (kind in ('ibqueryerrors', 'perfquery', 'sysfs') or (kind = 'ibdiagnet' and has_counters))
),
readings as (
    select c.guid, c.port, c.counter, c.seen_at, max(c.value) as value,
           bool_or(s.kind = 'ibqueryerrors') as from_ibqueryerrors
    from counters c join sources s using (source_id)
    where c.port is not null and c.seen_at <= $until
      and c.seen_at >= (select least(flaps_first, rank_first) from starts)
      and c.counter in (select counter from counter_widths)
    group by c.guid, c.port, c.counter, c.seen_at
),
iqe_snaps as (
    select distinct observed_at as seen_at from sources
    where kind = 'ibqueryerrors' and observed_at <= $until
      and observed_at >= (select least(flaps_first, rank_first) from starts)
),
series as (
    -- a window holds an ibqueryerrors reading of the series when it holds its last one
    select guid, port, counter, max(seen_at) as last_iqe_at
    from readings where from_ibqueryerrors
    group by guid, port, counter
),
implied_zero as (
    select s.guid, s.port, s.counter, q.seen_at, 0 as value, s.last_iqe_at
    from series s cross join iqe_snaps q
    where not exists (
        select 1 from readings r
        where r.guid = s.guid and r.port = s.port and r.counter = s.counter
          and r.seen_at = q.seen_at
    )
),
all_readings as (
    select guid, port, counter, seen_at, value, seen_at as held_from from readings
    union all
    select guid, port, counter, seen_at, value, least(seen_at, last_iqe_at) from implied_zero
),
windowed as (
    select a.guid, a.port, a.counter, a.seen_at, a.value,
           case when a.counter = 'LinkDownedCounter' then $flaps_since else $since end as after
    from all_readings a cross join starts st
    where a.held_from >= case when a.counter = 'LinkDownedCounter' then st.flaps_first
                              else st.rank_first end
),
ordered as (
    select guid, port, counter, seen_at, value, after,
           lag(value) over w as prev_value,
           lag(seen_at) over w as prev_at
    from windowed
    window w as (partition by guid, port, counter order by seen_at)
),
deltas as (
    select o.guid, o.port, o.counter, o.prev_at, o.seen_at,
           case when o.value >= o.prev_value then o.value - o.prev_value else o.value end
               as delta,
           o.value < o.prev_value as reset,
           coalesce(o.value >= (cast(1 as hugeint) << w.bits) - 1, false) as saturated
    from ordered o
    left join counter_widths w on w.counter = o.counter
    where o.prev_value is not null and o.seen_at > o.after and o.seen_at <= $until
)
select guid, port, counter, prev_at, seen_at, delta, reset, saturated
from deltas
where reset or case when counter = 'LinkDownedCounter' then delta > 0
                    else delta <> 0 or counter = 'SymbolErrorCounter' end
order by guid, port, counter, seen_at;
