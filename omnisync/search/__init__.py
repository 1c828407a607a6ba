"""Full-text search of an agent's sessions: index terms (:mod:`.terms`), hits (:mod:`.hits`)
and the bounded scan of stores that keep no index of their own (:mod:`.scan`)."""
