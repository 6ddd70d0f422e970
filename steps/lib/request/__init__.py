"""What arrives from the browser, from whom, and how far it is trusted.

contract.py checks the chat request against openapi.json; identity.py turns the viewer
address into a salted visitor hash; signing.py signs each exchange so history can come
back; edge_blocks.py is what the edge answers when WAF blocks. Import the modules
themselves: this file imports nothing.
"""
