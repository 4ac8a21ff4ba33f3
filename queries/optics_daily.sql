-- Transceiver diagnostics in [$since, $until], one row per module (device, port, serial number)
-- and lane, each quantity as the list of its UTC days' medians (a sweep may read a module
-- several times a day, and one reading taken while the link retrained must not steer a trend),
-- `days` the days they belong to, counted from the day of $since. The module's newest
-- placement and identity beside them.
with daily as (
    select device, port_name, serial_number, lane,
           date_diff('day', cast($since as date), cast(read_at as date)) as day,
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
)
select device, port_name, serial_number, lane, max(last_at) as last_at,
       arg_max(guid, last_at) as guid, arg_max(port, last_at) as port,
       arg_max(vendor, last_at) as vendor, arg_max(part_number, last_at) as part_number,
       arg_max(firmware, last_at) as firmware,
       list(day order by day) as days,
       list(temperature_c order by day) as temperature_c,
       list(vcc_v order by day) as vcc_v,
       list(tx_bias_ma order by day) as tx_bias_ma,
       list(tx_power_dbm order by day) as tx_power_dbm,
       list(rx_power_dbm order by day) as rx_power_dbm
from daily
group by device, port_name, serial_number, lane
order by device, port_name, serial_number, lane nulls first;
