"""Checks of a dataset: is every item measuring what it claims to (separability.py)?"""
