"""The Redis store, on redis-py (one server, or a Redis Cluster): ``store`` the store, ``scripts``
its Lua scripts (``lua/*.lua``, package data), ``open`` what the registry asks before redis-py is
imported."""
