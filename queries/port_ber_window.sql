-- Per port, the newest BER it reported itself between $since and $until, and when.
select guid, port, arg_max(raw_ber, seen_at) as raw_ber,
       arg_max(effective_ber, seen_at) as effective_ber,
       arg_max(symbol_ber, seen_at) as symbol_ber, arg_max(origin, seen_at) as origin,
       max(seen_at) as seen_at
from port_ber
where seen_at between $since and $until
group by guid, port
order by guid, port;
