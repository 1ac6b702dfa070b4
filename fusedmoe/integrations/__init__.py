"""Adapters to other libraries; each module imports its library only when it is used."""
