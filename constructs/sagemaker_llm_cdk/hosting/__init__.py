"""Hosting: the endpoint, inference components and their model, images and JumpStart models, with their settings."""
