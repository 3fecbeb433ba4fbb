"""The controller and the brokers: commands that check the state and emit records (KIP-858 log
directories, KIP-36 placement), and the broker side that reconciles directories on disk."""
