"""The run runtime: many agent runs per worker process, as asyncio tasks.

`host.RunHost` is the one event loop of a worker process (a thread); `driver` is the agent
loop written against it; `lanes` is where the synchronous work of a run (the database, the
in-process models, the plan tools) goes. docs/design/runtime.md describes the whole.
"""
