"""A chat around the answers: a question asked in a thread with its memory (conversation.py), one
delivery of a chat message from its claim to its finish (delivery.py), the questions a person and a
workspace may ask (limits.py) and what each question cost (usage.py)."""
