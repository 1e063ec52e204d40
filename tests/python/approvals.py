"""The official MCP Python client (mcp 2.3, its default mode) against `kyro mcp`, over
stdio and Streamable HTTP: the client negotiates 2026-07-28, an approval comes back as
`input_required`, the client asks its user (the elicitation callback) and retries; an
approved write runs once, a declined one runs nothing, and "for an hour" lets the next
call through without asking.

Usage: python3 tests/python/approvals.py PATH/TO/kyro
"""

import asyncio
import os
import re
import subprocess
import sys
import tempfile

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

KYRO = sys.argv[1]
TOKEN = "python-client-token-0123456789"


class Person:
    """The user behind the client: answers each question as told, and counts them."""

    def __init__(self):
        self.asked = []
        self.answer = {"approve": True}
        self.action = "accept"

    async def __call__(self, context, params):
        self.asked.append(params.message)
        return types.ElicitResult(action=self.action, content=self.answer)


def text(result):
    return " ".join(c.text for c in result.content if getattr(c, "text", None))


async def exercise(connect, workspace, person, label):
    async with connect() as client:
        version = client.session.protocol_version if hasattr(client, "session") else None
        target = os.path.join(workspace, f"{label}-a.txt")
        approved = await client.call_tool("write_file", {"path": f"{label}-a.txt", "content": "hi\n"})
        assert not approved.is_error, text(approved)
        assert len(person.asked) == 1 and "write_file" in person.asked[0], person.asked
        assert open(target).read() == "hi\n"

        person.action, person.answer = "decline", None
        declined = await client.call_tool("write_file", {"path": f"{label}-b.txt", "content": "no\n"})
        assert declined.is_error and "declined" in text(declined), text(declined)
        assert not os.path.exists(os.path.join(workspace, f"{label}-b.txt"))
        assert len(person.asked) == 2

        person.action, person.answer = "accept", {"approve": True, "remember": "hour"}
        first = await client.call_tool("write_file", {"path": f"{label}-c.txt", "content": "1\n"})
        assert not first.is_error, text(first)
        assert len(person.asked) == 3
        granted = await client.call_tool("write_file", {"path": f"{label}-d.txt", "content": "2\n"})
        assert not granted.is_error, text(granted)
        assert len(person.asked) == 3, "the grant let it through without asking"
        print(f"{label}: protocol {version}, approved once, declined, granted: ok")


async def main():
    with tempfile.TemporaryDirectory() as workspace:
        person = Person()
        params = StdioServerParameters(command=KYRO, args=["mcp", "--workspace", workspace])
        await exercise(lambda: Client(params, elicitation_callback=person), workspace, person, "stdio")

    with tempfile.TemporaryDirectory() as workspace:
        env = dict(os.environ, KYRO_HTTP_TOKEN=TOKEN)
        server = subprocess.Popen(
            [KYRO, "mcp", "--http", "127.0.0.1:0", "--workspace", workspace],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        try:
            url = re.search(r"http://\S+/mcp", server.stderr.readline()).group(0)
            person = Person()

            def connect():
                http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
                return Client(streamable_http_client(url, http_client=http), elicitation_callback=person)

            await exercise(connect, workspace, person, "http")
        finally:
            server.kill()
            server.wait()


asyncio.run(main())
