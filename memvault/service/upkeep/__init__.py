"""Keeping the stores healthy while serving: start-up checks and repair, the index build, housekeeping."""
