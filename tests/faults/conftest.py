"""The local S3 server (moto on 127.0.0.1) and a fresh bucket, shared with the reliability tests."""

from tests.reliability.test_s3 import bucket, endpoint, options  # noqa: F401
