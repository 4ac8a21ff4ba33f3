-- The newest stored SNMP poll of $device before $before: one row per interface.
select polled_at, if_index, if_name, oper_status, admin_status, last_change_ticks,
       sys_uptime_ticks, in_errors, out_errors, hc_in_octets, hc_out_octets, symbol_errors,
       phys_state
from snmp_ports
where device = $device
  and polled_at = (select max(polled_at) from snmp_ports
                   where device = $device and polled_at < $before)
order by if_index;
