-- One SNMP poll of one switch: a row per interface.
insert into snmp_ports (polled_at, device, if_index, if_name, oper_status, admin_status,
                        last_change_ticks, sys_uptime_ticks, in_errors, out_errors, hc_in_octets,
                        hc_out_octets, symbol_errors, phys_state, guid, port)
select $polled_at, $device, unnest($if_index), unnest($if_name), unnest($oper_status),
       unnest($admin_status), unnest($last_change_ticks), $sys_uptime_ticks, unnest($in_errors),
       unnest($out_errors), unnest($hc_in_octets), unnest($hc_out_octets),
       unnest($symbol_errors), unnest($phys_state), unnest($guid), unnest($port);
