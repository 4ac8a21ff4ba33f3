-- Every known address -> host (the newest file wins).
select address, arg_max(host, source_id) as host from host_addresses group by address;
