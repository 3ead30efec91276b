"""I/O helpers every layer may use: durable and atomic writes (`atomic`), the one-step
directory exchange (`swap`), flock-held locks (`lock`), bounded input readers (`inputs`),
a file's SHA-256 (`digest`) and running a program or git (`process`)."""
