-- Per-port increases of the data counters (PortXmitData, PortRcvData: octets divided by 4)
-- between consecutive readings that end in ($since, $until], for the series ($guids[i],
-- $ports[i], $counters[i]): the bits a port carried, for its bit error ratio
-- (auditor/analyse/ber.py). Only the ports asked about: every port of the switches of 30 days of
-- full snapshots is millions of rows (1.5 GB and 4 s of `suspects --since 30d` when it was asked
-- per switch). And only the counter asked of each: a port's BER reads its own PortRcvData and its
-- peer's PortXmitData, half the rows of both counters of both ends (issue #13: 29,264 rows and
-- 88 ms of `suspects --since 30d`).
-- Only increases that are known are returned: a reading lower than the one before is a reset
-- (the increase is then unknown), and 2^32-1 is a 32-bit PortCounters reading that saturated
-- (a 4X HDR port fills one in under a second; the 64-bit PortCountersExtended do not).
with window_start as (
    select coalesce(max(observed_at), timestamp '1970-01-01') as first_at from sources
    where (kind in ('ibqueryerrors', 'perfquery', 'sysfs') or (kind = 'ibdiagnet' and has_counters))
      and observed_at <= $since
),
wanted as (
    select unnest($guids::varchar[]) as guid, unnest($ports::integer[]) as port,
           unnest($counters::varchar[]) as counter
),
readings as (
    select c.guid, c.port, c.counter, c.seen_at, max(c.value) as value
    from counters c
    semi join wanted w on c.guid = w.guid and c.port = w.port and c.counter = w.counter
    where c.port is not null and c.counter in ('PortXmitData', 'PortRcvData')
      and c.seen_at <= $until and c.seen_at >= (select first_at from window_start)
    group by c.guid, c.port, c.counter, c.seen_at
),
ordered as (
    select guid, port, counter, seen_at, value,
           lag(value) over w as prev_value,
           lag(seen_at) over w as prev_at
    from readings
    window w as (partition by guid, port, counter order by seen_at)
)
select guid, port, counter, prev_at, seen_at, value - prev_value as delta
from ordered
where prev_value is not null and seen_at > $since and seen_at <= $until
  and value >= prev_value and prev_value <> 4294967295 and value <> 4294967295
order by guid, port, counter, seen_at;
