"""The request and answer bodies of the REST API, one module per resource (``common`` for what they share).

The OpenAPI document is generated from these classes: each component is named after its class, and its
description is the class's docstring. They are kept apart from the routers because the functions of
:mod:`benchgen.requests` take the requests and return the answers, and from those functions because a
resource's bodies are read together, as the document shows them. Path, query and header parameters are
the routers' own (:mod:`benchgen.api.parameters`).
"""
