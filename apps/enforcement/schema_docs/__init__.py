"""What the API docs (/api/docs/) tell a service author, apart from the views: per endpoint a summary, a
description written for callers, and request and response examples built on the seed scenarios (a daily quota
of 10 ModifyShardCount per account and stream; PutRecords limited in records and bytes per second per shard).

The views pass these to `extend_schema`; tests/enforcement/apis/test_api_docs.py holds every operation to
them (a summary, a description that is no docstring, examples that validate against their own schemas).
"""
