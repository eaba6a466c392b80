"""The steps: each S3 event, queue message or state machine task maps to one function here.

One module per step family (``ingest``, ``score``, ``artifact``, ``shards``, ``register``, ``prepare``,
``package``, ``evaluation``, ``dead_letters`` ...), beside the helpers they share (``keys``, ``context``,
``attempts`` ...). They reach the bucket, the tables, the bus and the state machines only through
:mod:`benchgen.ports`, taken as arguments: the handlers hand in the AWS adapters, the unit tests
in-memory fakes. No step imports an adapter.
"""
