"""CPU backends (``partita.relax.backend.cpu``)."""
