"""The local cloud: the synthesized stack on moto, with the Lambda handlers run in-process."""
