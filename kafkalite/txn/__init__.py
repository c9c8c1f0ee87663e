"""The transaction coordinator (KIP-98, KIP-447, KIP-360), as Kafka 2.8's
``kafka.coordinator.transaction``.

One per broker, serving the transactional ids whose ``__transaction_state`` partitions the broker
leads: the coordinator itself (InitProducerId's transactional path, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, timeouts and expiration), its state store (every state change written
to ``__transaction_state`` with acks=all and reloaded on election) and its marker channel
(WriteTxnMarkers to the partitions' leaders). Beside them, two pure modules with no I/O:
``metadata`` (the per-id state machine, Kafka's TransactionMetadata) and ``log_records``
(the ``__transaction_state`` key/value codec, Kafka's TransactionLog byte for byte).

Deliberately free of imports: each module is imported by what it names.
"""
