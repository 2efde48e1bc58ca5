"""What can this expression be? The resolver and the strategies it walks."""
