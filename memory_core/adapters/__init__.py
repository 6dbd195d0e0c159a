"""Adapters: implementations of the domain's store Protocol on real technologies."""
