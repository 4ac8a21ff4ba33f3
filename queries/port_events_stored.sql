-- The port events of origin $origin between $since and $until (UTC): what a table read again
-- (NVOS's ring of events, UFM's history) may hold already.
select event_at, state, device, port_name, code, message
from port_events
where origin = $origin and event_at >= $since and event_at <= $until;
