"""Hand-written facts: torch's own (`known`), and what reading other libraries' installed
sources cannot tell (`libraries`)."""
