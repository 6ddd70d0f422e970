"""The two stacks: edge (us-east-1, the web ACL) and chat (everything else)."""
