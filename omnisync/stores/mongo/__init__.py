"""The MongoDB store, on pymongo (MongoDB, and FerretDB v1 here): ``store`` the store,
``documents`` the one converter of records to documents, ``indexes`` its index set-up,
``search`` the terms index and BM25 ranking, ``open`` what the registry asks before pymongo is
imported."""
