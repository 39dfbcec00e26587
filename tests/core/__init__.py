"""The core on its own: language, ranking, the readers, screenshots, Jev, the Gemini client."""
