"""Reference workloads built on jaxlean: a Llama/Qwen-style transformer and more."""
