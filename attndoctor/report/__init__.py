"""Renderers of a Report: they format, they decide nothing."""

