-- Where every node is, from the newest inventory that names it.
select name, arg_max(site, source_id) as site, arg_max(row_name, source_id) as row_name,
       arg_max(rack, source_id) as rack, arg_max(u, source_id) as u
from inventory
group by name;
