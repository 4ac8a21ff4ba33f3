-- Per-port increases of the data counters (PortXmitData, PortRcvData: octets divided by 4)
-- between consecutive readings that end in ($since, $until], for the nodes in $guids: the bits
-- a port carried, for its bit error ratio (auditor/analyse/ber.py).
-- Only increases that are known are returned: a reading lower than the one before is a reset
-- (the increase is then unknown), and 2^32-1 is a 32-bit PortCounters reading that saturated
-- (a 4X HDR port fills one in under a second; the 64-bit PortCountersExtended do not).
with window_start as (
    select coalesce(max(observed_at), timestamp '1970-01-01') as first_at from sources
    where kind in ('ibqueryerrors', 'perfquery', 'sysfs') and observed_at <= $since
),
readings as (
    select guid, port, counter, seen_at, max(value) as value
    from counters
    where port is not null and counter in ('PortXmitData', 'PortRcvData')
      and guid in (select unnest($guids))
      and seen_at <= $until and seen_at >= (select first_at from window_start)
    group by guid, port, counter, seen_at
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
