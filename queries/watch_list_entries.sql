-- The stored watch list, strongest first.
select rank, device, port_name, serial_number, part_number, vendor, firmware, guid, port, lane,
       days, last_at, peer_guid, peer_port, peer_name, findings
from watch_list_entries
order by rank;
