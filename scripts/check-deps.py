#!/usr/bin/env python3
"""Checks that scripts/install-deps.sh installs everything the build used.

After a build, every header and library the build read from outside the
source and build trees is mapped to the Debian package that owns it:
  - headers: the compiler's dependency files as ninja logged them, and for
    the torch extension (whose depfiles omit system headers) `c++ -M` of
    each of its sources with its own flags;
  - libraries: ldd of every program and shared library the build made.
Each owning package must be one that install-deps.sh names, or one that
those pull in through Depends or Pre-Depends (not Recommends), or part of
Debian's base system (Essential or Priority: required), since install-deps.sh
installs with --no-install-recommends on a fresh machine. A package reached
only because an earlier session installed it by hand fails the check, naming
the file and its package. The CUDA toolkit in /usr/local/cuda is no Debian
package: its files are counted and allowed. Files of the PyTorch backend's
Python environment (scripts/make-venv.sh; the build's TUTTI_PYTHON) are
mapped to the PyPI package whose RECORD lists them, which
python/requirements.txt must pin at the installed version.

    scripts/check-deps.py BUILD_DIR [--drop PKG ...]

--drop leaves packages (Debian's or PyPI's) out of the lists, to show that the
check catches them.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
CUDA_PREFIXES = ("/usr/local/cuda",)


def listed_packages():
    out = subprocess.run([os.path.join(HERE, "install-deps.sh"), "--list"],
                         check=True, capture_output=True, text=True).stdout
    return [p for p in out.split() if p]


def installed_database():
    """dpkg's status file: name -> fields of every installed package."""
    db, fields, key = {}, {}, None
    with open("/var/lib/dpkg/status", encoding="utf-8", errors="replace") as f:
        for line in f.read().splitlines() + [""]:
            if not line:
                if "ok installed" in fields.get("Status", "") and "Package" in fields:
                    db[fields["Package"]] = fields
                fields, key = {}, None
            elif line[0] in " \t" and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
    return db


def allowed_packages(roots, db):
    """roots, everything their Depends/Pre-Depends reach, and the base system."""
    providers = {}
    for name, fields in db.items():
        for p in re.split(r"\s*,\s*", fields.get("Provides", "")):
            if p:
                providers.setdefault(p.split()[0], []).append(name)
    def resolve(alternatives):
        # apt takes the first alternative it can satisfy; an installed one counts.
        for alt in alternatives.split("|"):
            name = alt.strip().split()[0].split(":")[0]
            if name in db:
                return [name]
            if name in providers:
                return providers[name]
        return []
    allowed, todo = set(), list(roots)
    todo += [n for n, f in db.items()
             if f.get("Essential") == "yes" or f.get("Priority") == "required"]
    while todo:
        name = todo.pop()
        if name in allowed or name not in db:
            continue
        allowed.add(name)
        for field in ("Depends", "Pre-Depends"):
            for group in re.split(r"\s*,\s*", db[name].get(field, "")):
                if group:
                    todo += resolve(group)
    return allowed


def file_owners():
    """Path -> package, from dpkg's file lists."""
    owners = {}
    for lst in glob.glob("/var/lib/dpkg/info/*.list"):
        pkg = os.path.basename(lst)[:-len(".list")].split(":")[0]
        with open(lst, encoding="utf-8", errors="replace") as f:
            for path in f.read().splitlines():
                owners.setdefault(path, pkg)
    return owners


def owner_of(path, owners):
    candidates = [path, os.path.realpath(path)]
    for c in list(candidates):  # merged /usr: /lib/x is /usr/lib/x
        if c.startswith("/usr/"):
            candidates.append(c[4:])
        else:
            candidates.append("/usr" + c)
    for c in candidates:
        if c in owners:
            return owners[c]
    return None


def normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_pypi_packages():
    """name -> version of every pin in python/requirements.txt."""
    path = os.path.join(SOURCE, "python", "requirements.txt")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {normalized(m.group(1)): m.group(2)
                for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", f.read(), re.M)}


def build_python(build):
    """The Python the torch extension was built with (CMake's TUTTI_PYTHON)."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            m = re.search(r"^TUTTI_PYTHON:FILEPATH=(.+)$", f.read(), re.M)
    except OSError:
        return None
    return m.group(1).strip() if m and m.group(1).strip() else None


def site_packages(python):
    """Its site-packages folders (real paths); none for a Python outside a
    virtual environment, whose packages are Debian's."""
    if not python:
        return []
    out = subprocess.run([python, "-c", "import sys, sysconfig; p = sysconfig.get_paths(); "
                          "print(sys.prefix != sys.base_prefix); print(p['purelib']); print(p['platlib'])"],
                         check=True, capture_output=True, text=True).stdout.split("\n")
    return sorted({os.path.realpath(p) for p in out[1:3] if p}) if out[0] == "True" else []


def pypi_owners(sites):
    """Path -> (name, version), from each installed distribution's RECORD."""
    owners = {}
    for site in sites:
        for record in glob.glob(os.path.join(site, "*.dist-info", "RECORD")):
            name, version = os.path.basename(os.path.dirname(record))[:-len(".dist-info")].rsplit("-", 1)
            with open(record, encoding="utf-8", errors="replace") as f:
                for line in f:
                    path = line.rsplit(",", 2)[0]
                    owners[os.path.realpath(os.path.join(site, path))] = (normalized(name), version)
    return owners


def torch_library_path(sites):
    """Where the extension's torch and CUDA libraries are found once torch is
    imported: torch/lib and the nvidia-* packages' lib folders."""
    dirs = [d for site in sites for d in glob.glob(os.path.join(site, "torch", "lib")) +
            glob.glob(os.path.join(site, "nvidia", "*", "lib")) + glob.glob(os.path.join(site, "nvidia", "cu*", "lib"))]
    return ":".join(dirs)


def make_rule_deps(text):
    """The prerequisites of `gcc -M` output."""
    text = text.replace("\\\n", " ")
    return {p for line in text.splitlines() if ":" in line for p in line.split(":", 1)[1].split()}


def extension_headers(build):
    """The torch extension is compiled by torch's own ninja file, whose depfiles
    leave out system headers (-MMD): preprocess each source again with -M, on
    every core. What an object's `-M` found is kept beside its ninja file, keyed
    by the command and the object's time, so that later checks of the same
    build (check_deps_test.sh runs three) read it instead of preprocessing
    PyTorch's headers again (30 sources: about 40 s)."""
    paths, jobs = set(), []
    for ninja_file in glob.glob(os.path.join(build, "python*-build", "**", "build.ninja"),
                                recursive=True):
        with open(ninja_file) as f:
            text = f.read()
        var = dict(re.findall(r"^(\w+) = (.*)$", text, re.M))
        cflags = [a for a in shlex.split(var.get("cflags", "")) if a != "-c"]
        post = [a for a in shlex.split(var.get("post_cflags", "")) if a not in ("-MD", "-MMD")]
        cache_file = os.path.join(os.path.dirname(ninja_file), "check-deps-headers.json")
        try:
            with open(cache_file) as f:
                cache = json.load(f)
        except (OSError, ValueError):
            cache = {}
        for obj, source in re.findall(r"^build (\S+): compile (\S+)$", text, re.M):
            command = [var.get("cxx", "c++"), "-M", *cflags, source, *post]
            try:
                stamp = os.stat(obj).st_mtime_ns
            except OSError:
                stamp = None
            jobs.append((cache_file, cache, obj, shlex.join(command), stamp, command))

    def headers_of(job):
        _, cache, obj, key, stamp, command = job
        kept = cache.get(obj)
        if stamp is not None and kept and kept["command"] == key and kept["stamp"] == stamp:
            return kept["headers"]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        cache[obj] = {"command": key, "stamp": stamp, "headers": sorted(make_rule_deps(out))}
        return cache[obj]["headers"]

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for headers in pool.map(headers_of, jobs):
            paths.update(headers)
    for cache_file, cache in {job[0]: job[1] for job in jobs}.items():
        with open(cache_file, "w") as f:
            json.dump(cache, f)
    return paths, len(jobs)


def headers_used(build):
    """Every file a compile read: ninja's log of CMake's build (its depfiles
    name system headers), and the torch extension's."""
    paths = set()
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("    "):
            path = line.strip()
            paths.add(path if os.path.isabs(path) else os.path.join(build, path))
    extension, sources = extension_headers(build)
    return paths | extension, sources


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def libraries_used(build, torch_libs):
    """ldd of every program and shared library built; 'not found' is an error.
    The torch extension is resolved as it loads: after torch, whose libraries
    are then found (torch_libs)."""
    paths, missing = set(), []
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if d != "CMakeFiles"]
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not is_elf(path) or name.endswith(".o"):
                continue
            if not (os.access(path, os.X_OK) or ".so" in name):
                continue
            env = dict(os.environ)
            if os.path.relpath(path, build).startswith("python") and torch_libs:
                env["LD_LIBRARY_PATH"] = torch_libs
            out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env).stdout
            for line in out.splitlines():
                if "not found" in line:
                    missing.append(f"{path}: {line.strip()}")
                m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(", line)
                if m:
                    paths.add(m.group(1))
    return paths, missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--drop", action="append", default=[],
                    help="leave this package out of install-deps.sh's list")
    args = ap.parse_args()
    build = os.path.realpath(args.build)
    listed = [p for p in listed_packages() if p not in args.drop]
    db = installed_database()
    not_installed = [p for p in listed if p not in db]
    allowed = allowed_packages(listed, db)
    owners = file_owners()
    pins = {n: v for n, v in pinned_pypi_packages().items() if n not in map(normalized, args.drop)}
    sites = site_packages(build_python(build))
    pypi = pypi_owners(sites)

    headers, extension_sources = headers_used(build)
    problems_first = []
    if not extension_sources and glob.glob(os.path.join(build, "python", "tutti_torch", "*.so")):
        problems_first = ["the torch extension was built but its build.ninja was not found"]
    libraries, missing = libraries_used(build, torch_library_path(sites))
    problems = problems_first + missing
    checked, cuda, packages, from_pypi = 0, 0, set(), set()
    for path in sorted(headers | libraries):
        path = os.path.normpath(path)
        real = os.path.realpath(path)
        if any(real.startswith(site + "/") for site in sites):
            name, version = pypi.get(real, (None, None))
            if name is None:
                problems.append(f"{path}: belongs to no PyPI package of {sites[0]}")
            elif pins.get(name) != version:
                problems.append(f"{path}: from PyPI package {name}=={version}, which python/requirements.txt "
                                f"does not pin" + (f" (it pins {pins[name]})" if name in pins else ""))
            else:
                from_pypi.add(name)
            continue
        if any(p.startswith(SOURCE + "/") or p.startswith(build + "/") for p in (path, real)):
            continue
        if any(p.startswith(c) for p in (path, real) for c in CUDA_PREFIXES):
            cuda += 1
            continue
        checked += 1
        pkg = owner_of(path, owners)
        if pkg is None:
            problems.append(f"{path}: belongs to no Debian package")
        elif pkg not in allowed:
            problems.append(f"{path}: from package {pkg}, which scripts/install-deps.sh neither "
                            f"names nor pulls in through Depends")
        else:
            packages.add(pkg)
    for p in not_installed:
        problems.append(f"{p}: named by scripts/install-deps.sh but not installed")
    print(f"check-deps: {checked} headers and libraries from {len(packages)} Debian packages, "
          f"{cuda} from the CUDA toolkit in /usr/local/cuda, "
          f"files of {len(from_pypi)} PyPI packages pinned by python/requirements.txt ({', '.join(sorted(from_pypi))})"
          + (f" (dropped: {', '.join(args.drop)})" if args.drop else ""))
    for p in problems:
        print("check-deps: " + p)
    if problems:
        print(f"check-deps: FAILED: {len(problems)} file(s) a fresh machine would lack")
        return 1
    print("check-deps: every one comes from a package install-deps.sh installs or requirements.txt pins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
