-- Node locations from one inventory file.
insert into inventory (source_id, name, site, row_name, rack, u)
select $source_id, unnest($name), unnest($site), unnest($row_name), unnest($rack), unnest($u);
