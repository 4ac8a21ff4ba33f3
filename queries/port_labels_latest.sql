-- Faceplate label overrides, newest inventory first.
select name, port, arg_max(label, source_id) as label
from port_labels
group by name, port;
