"""This process's access to the counters in Redis: the client, the breaker, the one guarded path every engine call
takes, rebuilding lost durable counters, and reading or resetting a customer's counters."""
