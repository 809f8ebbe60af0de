"""The boundary to MCP tool servers: the only package in Planboard that imports the `mcp` SDK.

From the top down: `sessions` keeps a conversation's live sessions (`live`), `connection` opens
one of its own for a single use; `calls` calls tools, reads resources and gets prompts,
`listing` lists what a server offers; `oauth` signs requests in (`signin` a live session's,
with each call's tokens); `transport` reaches the server and opens the session; `elicit`
carries a server's questions to a person; `outcome` says what a use gave back, or why it
failed. How much a server can make us read, and hand to
the model, is bounded by `agents.mcp_limits` (which imports no part of the SDK).
"""
