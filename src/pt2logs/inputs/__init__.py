"""Inputs: finding files, listing folders and object stores, opening bytes (plain or compressed), grouping files into runs."""
