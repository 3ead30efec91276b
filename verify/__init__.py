"""Independent inspection of release bytes. Never imports `pipeline`."""
