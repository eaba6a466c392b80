"""The serverless pipeline steps: each S3 event or state machine task maps to one function here.

They take their adapters (object store, record repositories, event publisher) as arguments, so the
handlers stay thin and the steps are testable on moto or with in-memory fakes.
"""
