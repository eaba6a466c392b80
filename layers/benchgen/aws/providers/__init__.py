"""Each provider kind's adapter, ``<kind>.py``: the boto3 or HTTP calls that carry out the requests its
kind's module (``benchgen/providers/<kind>.py``) shapes; ``registry`` picks a connection's."""
