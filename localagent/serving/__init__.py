"""``localagent serve``: an OpenAI-compatible chat-completions API on the agent's decoder
(``openai_api``: the request and response shapes; ``serve``: the server)."""
