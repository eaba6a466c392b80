"""AWS adapters: the only modules in the library that talk to boto3."""
