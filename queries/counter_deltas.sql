-- Per-port counter increases between consecutive readings that end in ($since, $until].
-- A reading lower than the one before means the counter was reset (a switch reboot, or
-- someone reset them with perfquery): the increase is then the new value. A value at the top
-- of the counter's width is saturated: the true increase is "at least" the delta. ibqueryerrors
-- prints only counters above its threshold (default 0), so a port missing from an ibqueryerrors
-- snapshot reads 0 there.
-- Only error counters (those with a known width; not the data and packet counters), and only
-- readings from the last snapshot before the window on: 30 days of history stay untouched.
with window_start as (
    select coalesce(max(observed_at), timestamp '1970-01-01') as first_at from sources
    where (kind in ('ibqueryerrors', 'perfquery', 'sysfs') or (kind = 'ibdiagnet' and has_counters))
      and observed_at <= $since
),
readings as (
    select c.guid, c.port, c.counter, c.seen_at, max(c.value) as value,
           bool_or(s.kind = 'ibqueryerrors') as from_ibqueryerrors
    from counters c join sources s using (source_id)
    where c.port is not null and c.seen_at <= $until
      and c.seen_at >= (select first_at from window_start)
      and c.counter in (select counter from counter_widths)
    group by c.guid, c.port, c.counter, c.seen_at
),
iqe_snaps as (
    select distinct observed_at as seen_at from sources
    where kind = 'ibqueryerrors' and observed_at <= $until
      and observed_at >= (select first_at from window_start)
),
series as (
    select distinct guid, port, counter from readings where from_ibqueryerrors
),
implied_zero as (
    select s.guid, s.port, s.counter, q.seen_at, 0 as value, true as from_ibqueryerrors
    from series s cross join iqe_snaps q
    where not exists (
        select 1 from readings r
        where r.guid = s.guid and r.port = s.port and r.counter = s.counter
          and r.seen_at = q.seen_at
    )
),
all_readings as (
    select * from readings union all select * from implied_zero
),
ordered as (
    select guid, port, counter, seen_at, value,
           lag(value) over w as prev_value,
           lag(seen_at) over w as prev_at
    from all_readings
    window w as (partition by guid, port, counter order by seen_at)
)
select o.guid, o.port, o.counter, o.prev_at, o.seen_at, o.prev_value, o.value,
       case when o.value >= o.prev_value then o.value - o.prev_value else o.value end as delta,
       o.value < o.prev_value as reset,
       coalesce(o.value >= (cast(1 as hugeint) << w.bits) - 1, false) as saturated
from ordered o
left join counter_widths w on w.counter = o.counter
where o.prev_value is not null and o.seen_at > $since and o.seen_at <= $until
order by o.guid, o.port, o.counter, o.seen_at;
