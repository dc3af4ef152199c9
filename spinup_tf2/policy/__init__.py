"""What a user does with a trained policy: load it, watch it (video), ship it (export)."""
