"""The process topology: the data dir's owner process, the forwarders and hook clients that reach it over its socket."""
