"""The pieces of make_llama_gguf.py: `blocks` (the weight types and their random blocks) and
`archs` (each architecture's keys, sizes and tensors, as llama.cpp loads them)."""
