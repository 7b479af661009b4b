import os
import tempfile

# Each test session compiles into its own cache, so the compile path runs
# (test_cache.py checks the disk cache across processes).
os.environ.setdefault("ATTN_CACHE_DIR", tempfile.mkdtemp(prefix="attn-pytest-cache-"))
