"""Hand-written facts about torch and other libraries."""
