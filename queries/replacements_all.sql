-- Every recorded replacement, oldest first.
select replacement_id, ticket, part, replaced_at, a_guid, a_port, b_guid, b_port, a_name, b_name,
       old_serials, recorded_at
from replacements
order by replaced_at, replacement_id;
