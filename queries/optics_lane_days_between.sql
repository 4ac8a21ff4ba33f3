-- Every lane reading in [$since, $until] of the devices from $first to $last as numbers only:
-- the module (its row number in `optics_modules_between`, from 0), the lane (-1: a reading
-- without lanes), the day counted from the day of $since, and the quantities. Sorted by module,
-- lane and day: the caller takes the daily medians (numpy; DuckDB's `median` keeps a state per
-- group, 0.5 GB at 4,096 modules x 30 days).
with modules as (
    select device, port_name, serial_number,
           row_number() over (order by device, port_name, serial_number) - 1 as module
    from optics_readings
    where read_at >= $since and read_at <= $until and device >= $first and device <= $last
    group by device, port_name, serial_number
)
select m.module, coalesce(r.lane, -1) as lane,
       date_diff('day', cast($since as date), cast(r.read_at as date)) as day,
       r.temperature_c, r.vcc_v, r.tx_bias_ma, r.tx_power_dbm, r.rx_power_dbm
from optics_readings r
join modules m on r.device = m.device and r.port_name = m.port_name
    and r.serial_number is not distinct from m.serial_number
where r.read_at >= $since and r.read_at <= $until and r.device >= $first and r.device <= $last
order by m.module, lane, day;
