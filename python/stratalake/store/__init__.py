"""The table's store: the base handle (:class:`~stratalake.store.table_store.TableStore`), snapshot,
schema, tag and changelog managers, manifests, file paths, partitions, index manifests, the append
file codec and the reference collector. Imports only io/spec/lsm/merge/changelog and below."""
