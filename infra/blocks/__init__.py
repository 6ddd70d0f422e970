"""The constructs: one per repeated shape or per concern; stacks only connect them."""
