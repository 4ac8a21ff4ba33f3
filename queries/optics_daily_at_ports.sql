-- `optics_daily` for the modules read in the ports ($guids[i], $ports[i]) within [$since,
-- $until]: the histories a report's trend plots of those ports need, when the watch list was
-- precomputed (issue #25) and the whole window's histories were not read. The caller keeps the
-- modules whose newest placement is the port asked, as `WatchList.at_port` does. All the
-- report's ports in one statement: one statement a port was 88 scans of a month's 2 million
-- readings at 65,536 GPUs (7.5 s of a report).
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
    from optics_readings r
    where read_at >= $since and read_at <= $until
      and exists (select 1
                  from optics_readings p,
                       (select unnest($guids) as guid, unnest($ports) as port) as w
                  where p.read_at >= $since and p.read_at <= $until and p.guid = w.guid
                    and p.port = w.port and p.device = r.device and p.port_name = r.port_name
                    and p.serial_number is not distinct from r.serial_number)
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
