-- Addresses that name hosts (IPoIB, OOB, GIDs), from one hosts file.
insert into host_addresses (source_id, address, host)
select $source_id, unnest($address), unnest($host);
