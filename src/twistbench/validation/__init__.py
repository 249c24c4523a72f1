"""Validity checks of item sets (keys): the shortcut audit lives in `validation.shortcuts`."""
