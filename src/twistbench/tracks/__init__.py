"""tracks"""
