"""I/O helpers every layer may use: durable and atomic writes (`atomic`), the one-step
directory exchange (`swap`), flock-held locks (`lock`) and bounded input readers (`inputs`)."""
