"""What each REST API request does, as plain functions over the ports: one module per resource.

The routers of :mod:`benchgen.api` parse a request, call one function here with the :class:`ApiServices`
the handler built, and answer with what it returns; a unit test calls the same function with the
in-memory fakes. The request and answer bodies are in :mod:`benchgen.requests.schemas`.
"""
