-- `optics_thresholds_asof` for the modules of the devices from $first to $last (a bucket of
-- the watch list, issue #25): the newest row's limits, null ones included, as one aggregate
-- of a struct (a window numbering every row took twice the time, four `arg_max_null` of a
-- column each half again).
select device, port_name, serial_number, quantity, t.low_alarm, t.low_warning, t.high_warning,
       t.high_alarm
from (select device, port_name, serial_number, quantity,
             arg_max_null({'low_alarm': low_alarm, 'low_warning': low_warning,
                           'high_warning': high_warning, 'high_alarm': high_alarm},
                          (read_at, source_id)) as t
      from optics_thresholds
      where read_at <= $until and device >= $first and device <= $last
      group by device, port_name, serial_number, quantity)
order by device, port_name, serial_number, quantity;
