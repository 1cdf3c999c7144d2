"""Control: what people tell an agent that the service carries out (stop, resume, slash commands)."""
