"""Training and inference providers: one module per kind (``bedrock``, ``sagemaker``,
``openai_compatible``) defining everything the kind is, the registry that finds them by name, and the
connections users make to them with the checks every request to one passes."""
