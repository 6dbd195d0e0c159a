"""Tests of infra/ (deploy, teardown, key rotation) against a fake Azure CLI."""
