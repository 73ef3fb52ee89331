#!/usr/bin/env python3
"""The fault suite: every class of bad input or hostile environment that tr's
tools must turn into one line and a clear exit, run against the built tools.

usage: run_faults.py BIN_DIR [--mpi] [--no-address-limit]

Each case runs one command (with a 20 s limit: a hang fails) and checks
  - the exit code (2 for bad input and too little memory, 1 for a fault such
    as a stalled peer);
  - stderr: exactly one line, holding the expected words;
  - the files around it: nothing replaced that should not be, no temporary
    file left beside an output.
The classes follow docs/reliability.md, "The fault suite". --mpi adds the
cases that need mpirun (processes that disagree, a stopped process under
tr-bench --watchdog-ms 3000); --no-address-limit leaves out the ulimit -v case
(sanitizer builds reserve more address space than any such limit). Prints one line per case; exits 1 on the first
case that fails, with its output.
"""
import gzip
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(sys.argv[1])
MPI = "--mpi" in sys.argv[2:]
ADDRESS_LIMIT = "--no-address-limit" not in sys.argv[2:]
WORK = tempfile.mkdtemp(prefix="tr_faults_")
BASELINE = os.path.join(os.path.dirname(__file__), "..", "..", "reports", "baselines", "cpu_counters.json")
cases = 0

# The smallest runs that reach what each case tests.
BENCH = ["--device", "cpu", "--model", "mlp", "--width", "0.25", "--batch", "8", "--mode", "eager",
         "--variants", "train_base", "--warmup", "0", "--iters", "1", "--repetitions", "1"]
TRAIN = ["--device", "cpu", "--model", "mlp", "--width", "0.25", "--batch", "8", "--epochs", "1"]


def fail(name, why, out=""):
    print(f"faults: FAILED: {name}: {why}")
    if out:
        print(out)
    sys.exit(1)


def run(name, argv, code, words, limit_s=20, preexec=None, env=None):
    """Runs argv; checks the exit code and that stderr is one line with `words`."""
    global cases
    cases += 1
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=limit_s, preexec_fn=preexec,
                           env=env, cwd=WORK)
    except subprocess.TimeoutExpired:
        fail(name, f"still running after {limit_s} s: a hang")
    s = time.monotonic() - t0
    err = p.stderr
    if p.returncode != code:
        fail(name, f"exit {p.returncode}, want {code}", p.stdout + err)
    lines = [l for l in err.splitlines() if l.strip()]
    if len(lines) != 1:
        fail(name, f"stderr has {len(lines)} lines, want 1", err)
    for w in ([words] if isinstance(words, str) else words):
        if w not in lines[0]:
            fail(name, f"stderr lacks '{w}'", err)
    print(f"faults: ok   {name} ({s:.1f} s): {lines[0][:150]}")
    return p


def tool(*args):
    return [os.path.join(BIN, args[0])] + list(args[1:])


def no_temp_files(name, folder):
    left = [f for f in os.listdir(folder) if ".tmp." in f]
    if left:
        fail(name, f"temporary files left in {folder}: {left}")


def path(*parts):
    return os.path.join(WORK, *parts)


# ------------------------------------------------------------ 1. output paths
def output_paths():
    st = os.stat("/dev/null")
    run("--json /dev/null", tool("tr-bench", *BENCH, "--json", "/dev/null"), 2, "/dev/null")
    if not stat.S_ISCHR(os.stat("/dev/null").st_mode) or os.stat("/dev/null").st_ino != st.st_ino:
        fail("--json /dev/null", "/dev/null was replaced")
    fifo = path("fifo.json")
    os.mkfifo(fifo)
    run("--json FIFO", tool("tr-bench", *BENCH, "--json", fifo), 2, "fifo.json")
    if not stat.S_ISFIFO(os.stat(fifo).st_mode):
        fail("--json FIFO", "the FIFO was replaced")
    target = path("target.json")
    with open(target, "w") as f:
        f.write("keep")
    link = path("link.json")
    os.symlink(target, link)
    # A link is followed (Note [output paths]): the target gets the report, the link stays.
    p = subprocess.run(tool("tr-bench", *BENCH, "--json", link), capture_output=True, text=True, timeout=20, cwd=WORK)
    if p.returncode != 0 or not os.path.islink(link) or '"benchmarks"' not in open(target).read():
        fail("--json symlink", f"exit {p.returncode}; the link was replaced or its target not written", p.stderr)
    print("faults: ok   --json symlink: the target was written, the link kept")
    dangling = path("dangling.json")
    os.symlink(path("no", "such", "dir.json"), dangling)
    run("--json dangling symlink", tool("tr-bench", *BENCH, "--json", dangling), 2, "dangling.json")
    if not os.path.islink(dangling):
        fail("--json dangling symlink", "the link was replaced")
    ro = path("readonly.json")
    with open(ro, "w") as f:
        f.write("keep")
    os.chmod(ro, 0o444)
    run("--json read-only file", tool("tr-bench", *BENCH, "--json", ro), 2, "readonly.json")
    if open(ro).read() != "keep" or stat.S_IMODE(os.stat(ro).st_mode) != 0o444:
        fail("--json read-only file", "the read-only file was replaced or its mode changed")
    shutil.copy(BASELINE, path("in.json"))
    before = open(path("in.json")).read()
    run("report -o its own input", tool("tr-bench", "report", path("in.json"), "-o", path("in.json")), 2, "in.json")
    if open(path("in.json")).read() != before:
        fail("report -o its own input", "the input was overwritten")
    no_temp_files("output paths", WORK)


# ------------------------------------------------------------ 2. lists
def lists():
    for flag, value in [("--batch", "8,8"), ("--model", "mlp,mlp"), ("--mode", "eager,eager"), ("--batch", "8,"),
                        ("--batch", ","), ("--mode", "partial,partial-capture"), ("--batch", "8,08")]:
        argv = [a for a in BENCH]
        i = argv.index(flag)
        argv[i + 1] = value
        t0 = time.monotonic()
        run(f"{flag} {value}", tool("tr-bench", *argv, "--json", path("list.json")), 2, flag)
        if time.monotonic() - t0 > 5:
            fail(f"{flag} {value}", "refused only after work was done")
        if os.path.exists(path("list.json")):
            fail(f"{flag} {value}", "a report was written")


# ------------------------------------------------------------ 3. memory
def memory():
    run("data past any host", tool("tr-bench", "--device", "cpu", "--model", "mlp", "--image-size", "4096", "--batch",
                                   "1048576", "--mode", "eager"), 2,
        ["need 35184372088832 bytes", "of host memory but", "use a smaller --batch"])

    def address_space_3g():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    if not ADDRESS_LIMIT:
        return
    # cnn at batch 4096 wants a 3.6 GiB arena: refused against RLIMIT_AS before malloc.
    run("arena past ulimit -v", tool("tr-train", "--device", "cpu", "--model", "cnn", "--batch", "4096", "--synthetic",
                                     "--train-subset", "4096", "--val-subset", "64"), 2,
        ["this model and batch need an arena of", "of host memory but", "use a smaller --batch"],
        preexec=address_space_3g)


# ------------------------------------------------------------ 4. reports
def reports():
    text = open(BASELINE).read()
    base = json.loads(text)

    def variant(name, edit=None, raw=None):
        p = path(name)
        if raw is not None:
            open(p, "w").write(raw)
        else:
            j = json.loads(text)
            edit(j)
            json.dump(j, open(p, "w"))
        return p

    bad = {
        "1e999": (variant("e999.json", raw=text.replace('"num_cpus": ', '"num_cpus": 1e999, "x": ', 1)),
                  "a number is out of range"),
        "400 digits": (variant("digits.json", raw=text.replace('"num_cpus": ', '"num_cpus": ' + "9" * 400 + ', "x": ', 1)),
                       "a number is out of range"),
        "a directory": (WORK, "is a directory"),
        "negative step time": (variant("neg.json", lambda j: j["benchmarks"][0].update(real_time=-13.5)),
                               "real_time must be > 0, got -13.5"),
        "zero step time": (variant("zero.json", lambda j: j["benchmarks"][0].update(real_time=0)),
                           "real_time must be > 0"),
        "negative throughput": (variant("negtp.json", lambda j: j["benchmarks"][0].update(samples_per_second=-1)),
                                "counter 'samples_per_second' must be >= 0"),
        "a repeated key": (variant("dup.json", raw=text.replace('"real_time": ', '"real_time": 1, "real_time": ', 1)),
                           "key 'benchmarks[0].real_time' appears twice"),
        "a counter as a string": (variant("str.json", lambda j: j["benchmarks"][0].update(arena_bytes="12")),
                                  "counter 'arena_bytes' is not a number"),
        "no cases": (variant("empty.json", lambda j: j.update(benchmarks=[])), "holds no cases"),
        "a tta report": (variant("tta.json", raw='{"context": {"task": "tta"}, "tta": {}}'),
                         "is a time-to-accuracy report"),
    }
    for name, (p, words) in bad.items():
        run(f"gate: {name}", tool("tr-bench", "gate", "--counters-only", "--baseline", BASELINE, "--current", p), 2,
            [words] + ([os.path.basename(p)] if p != WORK else []))
    for name in ("1e999", "a directory", "a repeated key"):
        p, words = bad[name]
        run(f"report: {name}", tool("tr-bench", "report", p, "-o", path("r.html")), 2, words)
    run("gate: 3 vs 3 repetitions", tool("tr-bench", "gate", "--baseline", BASELINE, "--current", BASELINE), 2,
        ["cannot fail this gate", "--repetitions 4 or more"])


# ------------------------------------------------------------ 5. file-size limit
def file_size_limit():
    def fsize_1k():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    out = path("big", "report.json")
    os.makedirs(os.path.dirname(out))
    run("report past ulimit -f", tool("tr-bench", *BENCH, "--json", out), 2, ["report.json", "file size limit"],
        preexec=fsize_1k)
    if os.path.exists(out):
        fail("report past ulimit -f", "a partial report was left")
    no_temp_files("report past ulimit -f", os.path.dirname(out))


# ------------------------------------------------------------ 7, 8. data files
def idx(labels, n=4):
    """IDX bytes of n 2x2 images and their labels."""
    img = bytes([0, 0, 8, 3, 0, 0, 0, n, 0, 0, 0, 2, 0, 0, 0, 2]) + bytes([64]) * (4 * n)
    lab = bytes([0, 0, 8, 1, 0, 0, 0, n]) + bytes(labels)
    return img, lab


def data_dir(name, train_labels=(0, 1, 2, 1), gz_garbage=False):
    d = path(name)
    os.makedirs(d)
    for split, labels in (("train", train_labels), ("t10k", (0, 1, 2, 0))):
        img, lab = idx(labels)
        for kind, data in (("images-idx3-ubyte", img), ("labels-idx1-ubyte", lab)):
            if gz_garbage:
                open(os.path.join(d, f"{split}-{kind}.gz"), "wb").write(gzip.compress(data) + b"garbage")
            else:
                open(os.path.join(d, f"{split}-{kind}"), "wb").write(data)
    return d


def data_files():
    d = data_dir("fifo_data")
    os.remove(os.path.join(d, "train-images-idx3-ubyte"))
    os.mkfifo(os.path.join(d, "train-images-idx3-ubyte"))
    run("a FIFO in the data directory", tool("tr-train", "--data-dir", d, *TRAIN[:-2]), 2,
        ["train-images-idx3-ubyte", "not a regular file"], limit_s=10)
    d = data_dir("label255", train_labels=(0, 1, 2, 255))
    run("a training label of 255", tool("tr-train", "--data-dir", d, *TRAIN[:-2]), 2, "label 255 at index 3")
    d = data_dir("gzgarbage", gz_garbage=True)
    run("garbage after a gzip stream", tool("tr-train", "--data-dir", d, *TRAIN[:-2]), 2, "after the end of the gzip stream")
    d = path("loop")
    os.makedirs(d)
    os.symlink(os.path.join(d, "a"), os.path.join(d, "b"))
    os.symlink(os.path.join(d, "b"), os.path.join(d, "a"))
    os.symlink(os.path.join(d, "a"), os.path.join(d, "train-images-idx3-ubyte"))
    run("a symlink loop", tool("tr-train", "--data-dir", d, *TRAIN[:-2]), 2, "symbolic links")


# ------------------------------------------------------------ 6. processes (mpirun)
def mpirun():
    m = ["mpirun", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_rmaps_base_oversubscribe="1",
               OPENBLAS_NUM_THREADS="1")
    return m, env


def processes():
    m, env = mpirun()
    # mpirun gathers both processes' lines: check them without the one-line rule.
    argv = (m + ["-np", "1"] + tool("tr-train", *TRAIN, "--synthetic", "--seed", "1") + [":", "-np", "1"] +
            tool("tr-train", *TRAIN, "--synthetic", "--seed", "2"))
    global cases
    cases += 1
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=WORK)
    want = "the processes were started differently: --seed is '1' on process 0 but '2' on process 1"
    for proc in (0, 1):
        if f"[process {proc} of 2]: error: {want}" not in p.stderr:
            fail("processes with different seeds", f"process {proc} did not name the seed", p.stdout + p.stderr)
    if p.returncode != 2:
        fail("processes with different seeds", f"exit {p.returncode}, want 2", p.stderr)
    print(f"faults: ok   processes with different seeds: {want}")

    # A stopped process under tr-bench --watchdog-ms 3000: the job ends within
    # 10 s of the stop, naming process 1.
    cases += 1
    argv = m + ["-np", "2"] + tool("tr-bench", "--device", "cpu", "--model", "mlp", "--batch", "64", "--mode",
                                   "full-capture", "--variants", "train_base", "--warmup", "0", "--iters", "2000",
                                   "--repetitions", "100", "--watchdog-ms", "3000")
    log = open(path("stall.log"), "w+")
    job = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=WORK)
    victim = None
    for _ in range(600):
        time.sleep(0.1)
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
                cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            if b"OMPI_COMM_WORLD_RANK=1" in environ and b"tr-bench" in cmd:
                victim = int(pid)
        if victim:
            break
    if not victim:
        job.kill()
        fail("a stopped process under tr-bench", "process 1 was not found")
    time.sleep(2)  # inside the timed steps
    os.kill(victim, 19)  # SIGSTOP
    t0 = time.monotonic()
    try:
        job.wait(timeout=10)
    except subprocess.TimeoutExpired:
        job.kill()
        os.kill(victim, 9)
        fail("a stopped process under tr-bench", "still running 10 s after the stop")
    s = time.monotonic() - t0
    try:
        os.kill(victim, 9)
    except OSError:
        pass
    log.seek(0)
    out = log.read()
    if job.returncode == 0 or "process 1 did not answer within 1000 ms" not in out:
        fail("a stopped process under tr-bench", f"exit {job.returncode}; process 1 not named", out)
    print(f"faults: ok   a stopped process under tr-bench --watchdog-ms 3000: ended {s:.1f} s after the stop, "
          f"exit {job.returncode}")


try:
    output_paths()
    lists()
    memory()
    reports()
    file_size_limit()
    data_files()
    if MPI:
        processes()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
print(f"faults: ok ({cases} cases)")
