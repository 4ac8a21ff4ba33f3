-- How collecting from one device went in one sweep (never holds credentials).
insert into device_status (checked_at, device, collector, status, detail)
values ($checked_at, $device, $collector, $status, $detail);
