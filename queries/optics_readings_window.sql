-- Every lane reading taken in [$since, $until], oldest first per module and lane.
select read_at, device, port_name, guid, port, vendor, part_number, serial_number, firmware,
       temperature_c, vcc_v, lane, tx_bias_ma, tx_power_dbm, rx_power_dbm
from optics_readings
where read_at >= $since and read_at <= $until
order by device, port_name, serial_number, lane nulls first, read_at;
