-- `optics_thresholds_asof` for the modules read in the ports ($guids[i], $ports[i]) within
-- [$since, $until] (the trend plots of a report's ports when the watch list was precomputed,
-- issue #25), all of them in one statement.
select device, port_name, serial_number, quantity, low_alarm, low_warning, high_warning,
       high_alarm
from optics_thresholds t
where read_at <= $until
  and exists (select 1
              from optics_readings p,
                   (select unnest($guids) as guid, unnest($ports) as port) as w
              where p.read_at >= $since and p.read_at <= $until and p.guid = w.guid
                and p.port = w.port and p.device = t.device and p.port_name = t.port_name
                and p.serial_number is not distinct from t.serial_number)
qualify row_number() over (partition by device, port_name, serial_number, quantity
                           order by read_at desc, source_id desc) = 1
order by device, port_name, serial_number, quantity;
