"""The TorchSharp (C#) front end: index -> types -> resolution -> rule."""
