"""Typed Python functions as function tools: schemas from type hints, arguments checked before each call."""

from .registry import Tool, ToolRegistry

__all__ = ["Tool", "ToolRegistry"]
