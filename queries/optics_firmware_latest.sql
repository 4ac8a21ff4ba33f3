-- The newest firmware each module (by serial number) reported in its diagnostics (cohorts).
select serial_number, arg_max(firmware, read_at) as firmware
from optics_readings
where serial_number is not null and firmware is not null
group by serial_number
order by serial_number;
