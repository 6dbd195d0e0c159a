"""``stdio_wire.claimed_std_streams``: while serving, stray output goes to stderr, never onto the protocol."""

from __future__ import annotations

import subprocess
import sys

from tests.support.local_server import PROJECT_ROOT

PROBE = """
import os, subprocess, sys
from memory_core.mcp.stdio_wire import claimed_std_streams
with claimed_std_streams() as (wire_in, wire_out):
    print("stray print")
    subprocess.run(["echo", "child output"], check=True)
    os.write(wire_out, os.read(wire_in, 100).upper())
print("after, on stdout again")
"""


def test_stray_prints_and_children_miss_the_wire() -> None:
    """Only what is written to the wire reaches stdout while claimed; prints and children reach stderr."""
    result = subprocess.run([sys.executable, "-c", PROBE], input=b"protocol\n", capture_output=True, cwd=PROJECT_ROOT,
                            timeout=30, check=True)
    assert result.stdout == b"PROTOCOL\nafter, on stdout again\n"
    assert b"stray print" in result.stderr and b"child output" in result.stderr
