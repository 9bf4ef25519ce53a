"""Data sources: the trajectory model, loaders for real agent runs, and the DomainProfile."""
