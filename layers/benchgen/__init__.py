"""BenchGen: benchmark environments that judge a model and turn its mistakes into training data.

Pure domain modules live here beside the AWS adapters (``benchgen.aws``); only the adapters import boto3.
"""
