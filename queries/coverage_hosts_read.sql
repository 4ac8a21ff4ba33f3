-- What the host side has ever told us up to $until: host names with a host-collection status or
-- a kernel-log (dmesg) port event, and HCA GUIDs with sysfs counter readings. A host in none of
-- these was never read (its HCA end is seen only from the switch side).
select distinct 'host' as what, device as key
from device_status where collector = 'host' and checked_at <= $until
union
select distinct 'host', device
from port_events where origin = 'dmesg' and device is not null and event_at <= $until
union
select distinct 'guid', c.guid
from counters c join sources s using (source_id)
where s.kind = 'sysfs' and c.seen_at <= $until
order by 1, 2;
