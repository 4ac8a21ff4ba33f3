-- How many transceiver modules (device, port, serial number) each device had readings of in
-- [$since, $until], by device: the watch list works through the modules in buckets of whole
-- devices (issue #25: every module's history at once needs > 9 GB at 65,536 modules).
select device, count(*) as modules
from (select distinct device, port_name, serial_number
      from optics_readings
      where read_at >= $since and read_at <= $until)
group by device
order by device;
