"""The stores, all on the MemoryStore contract in base.py: the in-process store a module, each
server's backend a package (``sql/``, ``redis/``, ``mongo/``), each one entry in registry.py;
``encrypted.py`` seals any of them."""
