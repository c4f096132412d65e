"""The pieces of make_llama_gguf.py: `blocks` (the weight types and their random blocks), `archs`
(each architecture's keys, sizes and tensors, as llama.cpp loads them) and `reader` (a GGUF
file's keys and tensors, for the tokenizer copy and --check)."""
