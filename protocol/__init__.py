"""The pure core of acpc-lbr: ACPC games, cards, rules and wire formats.

Nothing in this package does I/O (beyond reading bundled game files) or
draws random numbers on its own: every reader of the game -- the dealer,
the agents, the log tools -- goes through these modules.
"""
