"""Planning for PDDL domains: Fast Downward, directly or through unified-planning."""
