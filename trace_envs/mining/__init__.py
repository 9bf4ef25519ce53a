"""Capability mining: contrast runs, propose candidate capabilities, label runs, select with Cov and Delta."""
