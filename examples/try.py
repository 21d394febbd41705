# The README's first example: `deno task run examples/try.py` runs it against ./mcp_servers.json.
from mcp_tools import filesystem, memory
import asyncio

folder = filesystem.list_allowed_directories()["content"].split("\n")[-1]
listing = filesystem.list_directory(path=folder)                       # blocks until answered
graph, dirs = await asyncio.gather(memory.read_graph_async(),          # or run calls in parallel
                                   filesystem.list_allowed_directories_async())
print(listing["content"])
len(graph["entities"])                                                 # last expression = result
