"""Topic alerts: new papers pushed to email, chat or a webhook through Apprise.

`message` composes (pure), `due` decides when (pure), `env` fills in secrets from the
environment (pure), `deliver` is the network edge (the only module that imports Apprise).
"""
