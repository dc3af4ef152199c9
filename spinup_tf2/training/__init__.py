"""What sac() leans on while it runs: the training checkpoint, episode replay, the
progress bar, videos."""
