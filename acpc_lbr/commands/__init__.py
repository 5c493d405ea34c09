"""Subcommands of the acpc-lbr command line that live in the compute core."""
