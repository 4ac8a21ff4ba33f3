"""A fake InfiniBand switch behind a real Net-SNMP snmpd, for the SNMP tests and benchmark."""
