"""The stores: one module per backend, all on the MemoryStore contract in base.py."""
