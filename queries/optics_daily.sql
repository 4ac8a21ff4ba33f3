-- Transceiver diagnostics in [$since, $until] as one row per module, lane and UTC day: the
-- median of that day's readings (a sweep may read a module several times a day, and a reading
-- taken while the link retrained must not steer a trend), and the module's newest placement
-- and identity. Oldest day first per module and lane.
select device, port_name, serial_number, lane,
       date_trunc('day', read_at) as day,
       max(read_at) as last_at,
       arg_max(guid, read_at) as guid, arg_max(port, read_at) as port,
       arg_max(vendor, read_at) as vendor, arg_max(part_number, read_at) as part_number,
       arg_max(firmware, read_at) as firmware,
       median(temperature_c) as temperature_c, median(vcc_v) as vcc_v,
       median(tx_bias_ma) as tx_bias_ma, median(tx_power_dbm) as tx_power_dbm,
       median(rx_power_dbm) as rx_power_dbm
from optics_readings
where read_at >= $since and read_at <= $until
group by device, port_name, serial_number, lane, day
order by device, port_name, serial_number, lane nulls first, day;
