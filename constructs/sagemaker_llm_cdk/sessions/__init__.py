"""Session-aware routing: the session front door and its turn log, with their settings."""
