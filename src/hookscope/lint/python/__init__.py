"""The Python front end: parse -> project index -> resolution -> rules."""
