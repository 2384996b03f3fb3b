"""The PanDA strategy's support: server and log tools, offline documentation/source indexes."""
