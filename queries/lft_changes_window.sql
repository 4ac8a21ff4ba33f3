-- The forwarding tables stored in ($since, $until] (each a change from the switch's table in
-- effect before it) with that previous table, and the capture before (the last one of any
-- switch, whose tables the SM changed since: the reroute happened in between).
select cur.captured_at, cur.guid, cur.ports, prev.ports as prev_ports,
       (select max(c.captured_at) from lft_captures c
        where c.captured_at < cur.captured_at) as capture_before
from lft_switches cur
asof left join lft_switches prev
  on cur.guid = prev.guid and cur.captured_at > prev.captured_at
where cur.captured_at > $since and cur.captured_at <= $until
  and (prev.digest is null or prev.digest <> cur.digest)
order by cur.captured_at, cur.guid;
