"""Every step a state machine or pipeline runs, one module per step family; a step reaches storage,
tables, providers and the bus only through ``benchgen.ports``."""
