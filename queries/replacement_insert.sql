-- Record one replacement a technician made.
insert into replacements (ticket, part, replaced_at, a_guid, a_port, b_guid, b_port, a_name,
                          b_name, old_serials, recorded_at)
values ($ticket, $part, $replaced_at, $a_guid, $a_port, $b_guid, $b_port, $a_name, $b_name,
        $old_serials, $recorded_at)
returning replacement_id;
