"""The Cosmos store's records: audit events, deletion requests, holds and the rest, by kind.

``CosmosRecords`` answers the records part of the ``MemoryStore`` Protocol for
``CosmosMemoryStore``, which delegates to it. A record is one item of its owner's partition
(layout in ``cosmos_documents``). Holds decide what a read shows, so their writes move the
partition's stamp in one transactional batch (``Stamps.write``) and a hold may not expire
(Cosmos DB would erase it without moving the stamp); other records are written alone. So:

- ``put_record`` and ``create_record`` are one write (a hold's: one batch with the stamp); with
  an etag the write is If-Match, with ``records.ABSENT`` a create, and a 412 or 409 becomes
  ``Conflict`` for the service to re-read; ``put_records`` is one transactional batch in one
  partition (a change and its audit event) whose operations follow the same rule (``_batch_write``),
  and ``delete_record_and_put`` one such batch that first deletes If-Match;
- ``get_record`` is a point read, ``query_records`` and ``page_records`` one query inside the
  partition (``page_records`` reads only the items it answers; its ``where_in`` is one
  ``ARRAY_CONTAINS`` of a parameter on an indexed ``/data/*`` path, however many values), ``query_records_of_owner``
  one cross-partition query;
- records with ``expires_on`` are erased by Cosmos DB itself (``ttl``), at no request of ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from azure.cosmos.exceptions import CosmosBatchOperationError, CosmosResourceExistsError

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters import cosmos_queries as queries
from memory_core.adapters.cosmos_calls import OpenOperation
from memory_core.adapters.cosmos_stamps import BatchRefused, Operation, Stamps
from memory_core.adapters.cosmos_writes import erase_items
from memory_core.domain.errors import Conflict
from memory_core.domain.records import (
    ABSENT,
    Partition,
    Record,
    RecordKind,
    check_delete_record_and_put,
    check_put_records,
)


class CosmosRecords:
    """The records of ``CosmosMemoryStore``. Thread-safe: what it keeps is the stamps', locked."""

    def __init__(self, operation: OpenOperation, stamps: Stamps) -> None:
        """``operation``: opens one named store operation (``CosmosAccount.operation``)."""
        self._operation = operation
        self._stamps = stamps

    # -- MemoryStore: records -------------------------------------------------

    def put_record(self, record: Record) -> Record:
        if record.kind != RecordKind.HOLD:
            with self._operation("put_record") as calls:
                body = calls.write(docs.record_item(record), record.etag)
            return Record(record.partition, record.kind, record.id, record.data, body.get("_etag"))
        _no_expiry(record)
        operation = _batch_write(record)
        partition = record.partition
        with self._operation("put_record") as calls:
            try:
                (result,) = self._stamps.write(calls, partition.instance_id, partition.owner, lambda _: [operation])
            except BatchRefused as refused:
                if refused.status in (404, 409, 412):
                    gone = f"the stored {record.kind} changed, went or was created since it was read"
                    raise Conflict(gone) from refused.error
                raise refused.error from None
        return Record(partition, record.kind, record.id, record.data, result["resourceBody"].get("_etag"))

    def create_record(self, record: Record) -> Record:
        item = docs.record_item(record)
        partition = record.partition
        with self._operation("create_record") as calls:
            try:
                if record.kind != RecordKind.HOLD:
                    body = calls.create(item)
                else:
                    _no_expiry(record)
                    (result,) = self._stamps.write(calls, partition.instance_id, partition.owner,
                                                   lambda _: [("create", (item,))])
                    body = result["resourceBody"]
            except (CosmosResourceExistsError, BatchRefused) as e:
                if isinstance(e, BatchRefused) and e.status != 409:
                    raise e.error from None
                raise Conflict(f"the {record.kind} record already exists") from e
        return Record(partition, record.kind, record.id, record.data, body.get("_etag"))

    def put_records(self, records: Sequence[Record]) -> list[Record]:
        check_put_records(records)
        if not records:
            return []
        partition = records[0].partition
        with self._operation("put_records") as calls:
            try:
                results = calls.execute_batch([_batch_write(record) for record in records],
                                              [partition.instance_id, partition.owner])
            except CosmosBatchOperationError as refused:
                if refused.status_code in (404, 409, 412):
                    kind = records[refused.error_index].kind
                    raise Conflict(f"the {kind} record changed, went or was created since it was read") from refused
                raise
        return [Record(r.partition, r.kind, r.id, r.data, (result.get("resourceBody") or {}).get("_etag"))
                for r, result in zip(records, results, strict=True)]

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        item_id = docs.record_item_id(partition, kind, record_id)
        if not docs.is_valid_id(item_id):
            return None
        with self._operation("get_record") as calls:
            item = calls.read(item_id, [partition.instance_id, partition.owner])
        return docs.record_from_item(partition, item) if item is not None else None

    def query_records(
        self, partition: Partition, kind: str, where: Mapping[str, str] | None = None, limit: int | None = None
    ) -> list[Record]:
        if limit is not None:
            return self.page_records(partition, kind, limit=limit, where=where)
        sql, params = queries.records_query(partition.instance_id, partition.owner, kind, where)
        with self._operation("query_records") as calls:
            items = calls.query(sql, params, [partition.instance_id, partition.owner])
        return sorted((docs.record_from_item(partition, i) for i in items), key=lambda r: r.id)

    def page_records(
        self,
        partition: Partition,
        kind: str,
        *,
        limit: int,
        where: Mapping[str, str] | None = None,
        after: str | None = None,
        descending: bool = False,
        key_suffixes: Sequence[str] | None = None,
        where_in: tuple[str, Sequence[str]] | None = None,
    ) -> list[Record]:
        if limit < 1:
            return []
        sql, params = queries.records_query(partition.instance_id, partition.owner, kind, where)
        if key_suffixes is not None:
            sql += queries.ending_in_any("c.record_id", key_suffixes, params)
        if where_in is not None:
            sql += queries.data_in(*where_in, params)
        if after is not None:
            sql += " AND c.id < @after" if descending else " AND c.id > @after"
            params["@after"] = docs.record_item_id(partition, kind, after)
        # TOP and a single-field ORDER BY on c.id, which every indexing policy
        # indexes: the query reads only the items it answers. Within one partition
        # and kind, item ids are one prefix plus the record id, kept as is for the
        # characters paged ids use (letters, digits, - _ . ~ : +), so they sort alike.
        sql = sql.replace("SELECT *", f"SELECT TOP {int(limit)} *", 1)
        sql += " ORDER BY c.id DESC" if descending else " ORDER BY c.id"
        with self._operation("page_records") as calls:
            items = calls.query(sql, params, [partition.instance_id, partition.owner])
        return [docs.record_from_item(partition, i) for i in items]

    def query_records_of_owner(self, owner: str, kind: str, where: Mapping[str, str] | None = None) -> list[Record]:
        sql, params = queries.records_query(None, owner, kind, where)
        with self._operation("query_records_of_owner") as calls:
            items = calls.query(sql, params, None)
        records = [docs.record_from_item(Partition(i["instance_id"], owner), i) for i in items]
        return sorted(records, key=lambda r: (r.partition.instance_id, r.id))

    def erase_expired_records(self, now: datetime) -> int:
        return 0  # Cosmos DB erases items whose ttl has run out (the container has defaultTtl -1)

    def delete_record(self, partition: Partition, kind: str, record_id: str, etag: str | None = None) -> bool:
        if etag is not None and kind == RecordKind.HOLD:
            raise ValueError("a hold is erased without an etag (its erasure moves the partition's stamp)")
        item_id = docs.record_item_id(partition, kind, record_id)
        if not docs.is_valid_id(item_id):
            return False
        with self._operation("delete_record") as calls:
            if kind != RecordKind.HOLD:
                return calls.delete(item_id, [partition.instance_id, partition.owner], etag)
            return erase_items(calls, self._stamps, partition.instance_id, partition.owner, [item_id]) == 1

    def delete_record_and_put(self, erased: Record, written: Record) -> Record | None:
        check_delete_record_and_put(erased, written)
        partition = erased.partition
        item_id = docs.record_item_id(partition, erased.kind, erased.id)
        if not docs.is_valid_id(item_id):
            return None
        # The erasure first: the test server applies a batch in order without rolling back, and stops at a failure.
        operations = [("delete", (item_id,), {"if_match_etag": erased.etag}), _batch_write(written)]
        with self._operation("delete_record_and_put") as calls:
            try:
                _, result = calls.execute_batch(operations, [partition.instance_id, partition.owner])
            except CosmosBatchOperationError as refused:
                if refused.error_index == 0 and refused.status_code == 404:
                    return None
                if refused.status_code in (404, 409, 412):
                    kind = (erased, written)[refused.error_index].kind
                    raise Conflict(f"the {kind} record changed, went or was created since it was read") from refused
                raise
        body = result.get("resourceBody") or {}
        return Record(partition, written.kind, written.id, written.data, body.get("_etag"))


def _no_expiry(hold: Record) -> None:
    """Refuse a hold with ``expires_on``: Cosmos DB would erase it on its own, without moving the stamp."""
    if hold.expires_on is not None:
        raise ValueError("a hold never expires (its erasure must move the partition's stamp)")


def _batch_write(record: Record) -> Operation:
    """The batch operation that writes ``record`` as its etag asks (``MemoryStore.put_records``)."""
    item = docs.record_item(record)
    if record.etag is None:
        return ("upsert", (item,))
    if record.etag == ABSENT:
        return ("create", (item,))
    return ("replace", (item["id"], item), {"if_match_etag": record.etag})


__all__ = ["CosmosRecords"]
