"""Built-in example training used by `training-check demo` (needs only numpy and wandb offline)."""
