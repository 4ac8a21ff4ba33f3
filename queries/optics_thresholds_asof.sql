-- The newest thresholds each module (device, port, serial number) reported for each quantity
-- up to $until: a watch list replayed for an earlier day uses the limits known then.
select device, port_name, serial_number, quantity, low_alarm, low_warning, high_warning,
       high_alarm
from optics_thresholds
where read_at <= $until
qualify row_number() over (partition by device, port_name, serial_number, quantity
                           order by read_at desc, source_id desc) = 1
order by device, port_name, serial_number, quantity;
