"""The long-running process: receiver, pollers, sweeps and the runner loop together."""
