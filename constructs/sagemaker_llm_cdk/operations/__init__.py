"""Operations: monitoring and alarms, the deployment check, cost tables and prices."""
