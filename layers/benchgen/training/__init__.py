"""Weights training: preparations (inspectable training material), coverage, and exact packages."""
