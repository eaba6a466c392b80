"""Training and inference providers: what each kind can do, and the connections users make to them."""
