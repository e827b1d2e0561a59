"""Test helpers shared by the suite: AWS request checks against botocore's model, fake Lambda context."""
