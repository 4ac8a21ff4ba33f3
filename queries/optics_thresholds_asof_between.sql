-- `optics_thresholds_asof` for the modules of the devices from $first to $last (a bucket of
-- the watch list, issue #25): the newest row's limits (null ones included, `arg_max_null`), as
-- an aggregate: half the time of numbering every row with a window.
select device, port_name, serial_number, quantity,
       arg_max_null(low_alarm, (read_at, source_id)) as low_alarm,
       arg_max_null(low_warning, (read_at, source_id)) as low_warning,
       arg_max_null(high_warning, (read_at, source_id)) as high_warning,
       arg_max_null(high_alarm, (read_at, source_id)) as high_alarm
from optics_thresholds
where read_at <= $until and device >= $first and device <= $last
group by device, port_name, serial_number, quantity
order by device, port_name, serial_number, quantity;
