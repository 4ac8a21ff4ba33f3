-- The modules (device, port, serial number) read in [$since, $until] on the devices from $first
-- to $last, in the order `optics_lane_days_between` numbers them: each module's newest read
-- time, and its newest placement and identity (what `optics_daily` gives every lane row).
select device, port_name, serial_number, max(read_at) as last_at,
       arg_max(guid, read_at) as guid, arg_max(port, read_at) as port,
       arg_max(vendor, read_at) as vendor, arg_max(part_number, read_at) as part_number,
       arg_max(firmware, read_at) as firmware
from optics_readings
where read_at >= $since and read_at <= $until and device >= $first and device <= $last
group by device, port_name, serial_number
order by device, port_name, serial_number;
