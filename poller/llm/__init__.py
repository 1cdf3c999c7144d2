"""Language models, through one provider library (pydantic-ai): the model agents' turns
(:mod:`poller.turns.model`), and the one-shot completions of the screen, the summarizer and
the away accounts.  Installed with ``pip install 'mood-poller[models]'``; nothing here is
imported until a model is used."""
