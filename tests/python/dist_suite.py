"""PyTorch's own backend test suite (`DistributedTest._DistTestBase`, which
upstream drives from test/distributed/test_distributed_spawn.py; the wheel
does not ship that driver) run on one backend, as a PyTorch developer would.

    BACKEND=tutti WORLD_SIZE=2 python3 tests/python/dist_suite.py [--json OUT] [-k NAME]

PyTorch's skip decorators name gloo where they mean "a backend for CPU
tensors" (`BACKEND != "gloo"`, `BACKEND == "gloo"`); for "tutti" they are read
as for gloo, so both run the same tests. What PyTorch itself refuses to any
backend but gloo is left as it is and shows up as a difference
(tests/python/compare_suite.sh lists them). Each process imports tutti_torch,
which registers "tutti".
"""
import argparse
import json
import os
import re
import sys
import tempfile
import types
import unittest

BACKEND = os.environ.setdefault("BACKEND", "tutti")
# fork: each test starts its processes without importing torch again.
START_METHOD = os.environ.get("TUTTI_SUITE_START", "fork")
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="tutti-dist-suite-"))
os.environ.setdefault("TUTTI_SOCKET_IFNAME", "lo")
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.testing._internal.distributed.distributed_test as upstream  # noqa: E402

if BACKEND == "tutti":
    import tutti_torch  # noqa: F401,E402  (registers the backend)


def _suite_module():
    """distributed_test.py with its gloo checks also true for tutti."""
    source = open(upstream.__file__).read()
    if BACKEND == "tutti":
        source = re.sub(r'BACKEND\s*!=\s*"gloo"', 'BACKEND not in ("gloo", "tutti")', source)
        source = re.sub(r'BACKEND\s*==\s*"gloo"', 'BACKEND in ("gloo", "tutti")', source)
        source = source.replace('require_backend_is_available({"gloo"})',
                                'require_backend_is_available({"gloo", "tutti"})')
    module = types.ModuleType("tutti_dist_suite_upstream")
    module.__file__ = upstream.__file__
    sys.modules[module.__name__] = module
    exec(compile(source, upstream.__file__, "exec"), module.__dict__)
    return module


def _treat_as_gloo():
    """The feature sets PyTorch's decorators read (DistTestCases): tutti
    joins every set gloo is in."""
    from torch.testing._internal.common_distributed import DistTestCases
    for sets in (DistTestCases.backend_feature, DistTestCases.skip_collective):
        for backends in sets.values():
            if "gloo" in backends:
                backends.add("tutti")
    # A registered third-party backend counts as available.
    DistTestCases.backend_feature["plugin"].add("tutti")


if BACKEND == "tutti":
    _treat_as_gloo()
suite = _suite_module()


class TestDistBackendWithSpawn(suite.TestDistBackend, suite.DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._start_processes(torch.multiprocessing.get_context(START_METHOD).Process)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", help="write each test's outcome here")
    parser.add_argument("-k", action="append", default=[], help="only tests whose name contains this")
    args = parser.parse_args()
    loader = unittest.TestLoader()
    tests = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
    if args.k:
        tests = unittest.TestSuite(t for t in tests if any(k in t.id() for k in args.k))
    # The runner lets go of each test once it has run: names first.
    outcome = {t.id().rsplit(".", 1)[-1]: "passed" for t in tests}
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(tests)
    for kind, items in (("failed", result.failures), ("error", result.errors),
                        ("skipped", result.skipped), ("passed", result.expectedFailures)):
        for t, _ in items:
            outcome[t.id().rsplit(".", 1)[-1]] = kind
    counts = {k: sum(1 for v in outcome.values() if v == k) for k in ("passed", "failed", "error", "skipped")}
    print(f"{BACKEND} with {os.environ['WORLD_SIZE']} processes: " +
          ", ".join(f"{v} {k}" for k, v in counts.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"backend": BACKEND, "world_size": os.environ["WORLD_SIZE"],
                       "torch": torch.__version__, "outcome": outcome}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
