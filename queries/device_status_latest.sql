-- The newest status of every device and collector.
select device, collector, arg_max(status, checked_at) as status,
       arg_max(detail, checked_at) as detail, max(checked_at) as checked_at
from device_status
group by device, collector
order by device, collector;
