"""Gateway forward-auth: the request a gateway is about to pass on, turned into a check."""
