"""LEAF preparation, own code: rebuilding LEAF datasets from their raw sources (Shakespeare from
the complete-works text) into LEAF JSON that fedbench's loaders read."""
