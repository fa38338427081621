"""The constraint on the model's output: the grammar built from the tools' schemas
(``grammar``), the engines that enforce it token by token behind one matcher interface
(``llama_grammar``: GBNF through llama.cpp, with ``FailClosed``; ``llguidance_engine``),
and jump-forward, the text the constraint fixes next (``jump``)."""
