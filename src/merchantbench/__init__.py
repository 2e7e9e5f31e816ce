"""MerchantBench: can an LLM agent run a drop-shipping store for a year?"""

__version__ = "0.1.0"
