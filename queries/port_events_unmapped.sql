-- Device and port names of port events no topology placed when they were stored (guid null:
-- a log ingested before the first snapshot that names its switches), each pair once.
select distinct device, port_name
from port_events
where guid is null and device is not null;
