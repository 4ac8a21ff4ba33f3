-- Faceplate labels of ports, from one inventory file.
insert into port_labels (source_id, name, port, label)
select $source_id, unnest($name), unnest($port), unnest($label);
