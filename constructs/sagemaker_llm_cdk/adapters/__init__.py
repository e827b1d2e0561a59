"""LoRA adapters on a base model: one adapter, adapter stacks for many, adapter manifests, with their settings."""
