"""Measuring the agent, apart from the runtime: tool-call accuracy on the call suites
(``evaluate``), the everyday task suite (``tasks``), the earlier wrong-path set
(``recovery``) and the benchmark (``bench``)."""
