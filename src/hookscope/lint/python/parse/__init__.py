"""Python sources parsed once: the tree, its scopes, call sites and name bindings."""
